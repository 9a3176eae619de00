"""The ``generic`` dialect: the wire API of the README's "generic wire API" section."""

from __future__ import annotations

import json.encoder
import math
from collections.abc import Callable, Mapping
from typing import Any

from ..http import HttpRequest, HttpResponse, _response, json_response, json_text
from ..messages import JobView, Reply, Request, RequestKind
from ..settings import RunSettings
from ..webhooks import Outgoing, WebhookMessage, iso_timestamp, signed_message
from .base import (
    BadRequest,
    Dialect,
    Route,
    read_json_object,
    route_request,
    submit_request,
    video_response,
)


def _seconds(value: float | None) -> float | None:
    """Whole seconds as an int; a time-scaled fraction to the millisecond (never rounded down)."""
    if value is None:
        return None
    if float(value).is_integer():
        return int(value)
    return math.ceil(value * 1000) / 1000


def generic_payload(event: str, job: JobView, timestamp: str) -> Mapping[str, Any]:
    """The generic webhook body: ``{"type", "timestamp", "data": {...job...}}``."""
    return {"type": event, "timestamp": timestamp, "data": GenericDialect().job(job)}


def generic_webhook_message(send: Outgoing) -> WebhookMessage:
    """One send in the generic shape (``generic_payload``), signed per Standard Webhooks: what
    the generic dialect sends, and every provider dialect whose provider has no webhooks."""
    delivery = send.delivery
    payload = generic_payload(delivery.event, delivery.job, iso_timestamp(send.changed_at))
    return signed_message(payload, send)


#: What ``GenericDialect._status`` keeps per job: the view's status, progress, poll hint,
#: message, result and error it was made from, and the JSON before and after the elapsed time.
_Pieces = tuple[Any, ...]
#: Stands for the elapsed time in the JSON the pieces are cut from.
_MARK = "\x00elapsed_seconds\x00"
_MARK_JSON = json_text(_MARK).encode()
#: Jobs whose pieces are kept at most (forgotten all at once when full); as many submit
#: answers' pieces, by the objects they were made of.
_PIECES_KEPT = 1024
#: Stands for the job's id in the submit answer the pieces are cut from, and its JSON text.
_ID_MARK = "\x00job_id\x00"
_ID_MARK_JSON = json_text(_ID_MARK)[1:-1].encode()
#: A string's JSON text (quotes included) as ``json_text`` writes it.
_encode_text: Callable[[str], str] = json.encoder.encode_basestring


def _submitted(job: JobView, job_id: str) -> dict[str, Any]:
    """The generic answer to a submit that made ``job``, showing ``job_id`` as its id."""
    poll_after = _seconds(job.poll_after)
    done = job.done
    return {
        "job_id": job_id,
        "status": job.status,
        "done": done,
        "message": (
            f"The job has STARTED and is NOT complete. Do not report success. Check "
            f"status_url after at least {poll_after or 0} seconds."
            if not done
            else job.message
        ),
        "poll_after_seconds": poll_after,
        "estimated_duration_seconds": _seconds(job.estimated_duration),
        "status_url": f"/v1/jobs/{job_id}",
    }


class GenericDialect(Dialect):
    name = "generic"
    headers_read = Dialect.headers_read

    def __init__(self, settings: RunSettings | None = None) -> None:
        super().__init__(settings)
        self._pieces: dict[str, _Pieces] = {}
        #: Pieces of submit answers (``_submit``), by the job spec of the jobs they were made for.
        self._submit_pieces: dict[int, _Pieces] = {}

    routes = (
        Route("POST", "/v1/jobs", "submit"),
        Route("GET", "/v1/jobs", "list"),
        Route("GET", "/v1/jobs/{job_id}", "status"),
        Route("GET", "/v1/jobs/{job_id}/content", "content"),
        Route("POST", "/v1/jobs/{job_id}/cancel", "cancel"),
    )

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        if route.kind != "submit":
            return route_request(route.kind, params.get("job_id"), common)
        body = read_json_object(http)
        if not isinstance(body.get("prompt"), str) or not body["prompt"].strip():
            message = "'prompt' is required and must be a non-empty string."
            raise BadRequest(422, "invalid_request", message, body=body)
        for optional in ("model", "callback_url"):
            if optional in body and not isinstance(body[optional], str):
                message = f"'{optional}' must be a string."
                raise BadRequest(422, "invalid_request", message, body=body)
        callback = body.get("callback_url")
        return submit_request(common, body, callback)

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        kind = reply.request.kind
        if kind == "list":
            return json_response(
                200, {"jobs": [self.job(j) for j in reply.jobs], "has_more": False}, reply.headers
            )
        job = reply.job
        assert job is not None
        if kind == "content":
            disposition = ("Content-Disposition", f'attachment; filename="{job.id}.mp4"')
            return video_response(reply, [disposition])
        if kind == "submit":
            headers = (*reply.headers, ("Location", f"/v1/jobs/{job.id}"))
            return json_response(reply.status_code, _submitted(job, job.id), headers)
        return self._status(reply, http)

    def renderer(self, kind: RequestKind) -> Callable[[Reply, HttpRequest], HttpResponse]:
        cls = type(self)
        if cls.render is Dialect.render and cls.render_answer is GenericDialect.render_answer:
            if kind == "status" and not self.keeps_status_answers:
                return self._status
            if kind == "submit":
                return self._submit
        return super().renderer(kind)

    def _submit(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        """``render_answer(reply, http)`` for a submit of ``job = reply.job``: the same answer,
        its body the pieces kept around the job's id (twice: ``job_id`` and ``status_url``)
        joined around the id's JSON text. The rest of a submit's answer depends on the job's
        status, poll hint, estimate and message alone (the same objects from the engine's
        table of steps for every job of one step), so the pieces are kept per job spec and
        used while they are those very objects."""
        job = reply.job
        assert job is not None
        kept = self._submit_pieces.get(job.spec_index)
        if (
            kept is None
            or kept[0] is not job.status
            or kept[1] is not job.poll_after
            or kept[2] is not job.estimated_duration
            or kept[3] is not job.message
        ):
            return self._keep_submit(reply, job)
        text = _encode_text(job.id)[1:-1].encode("utf-8", "backslashreplace")
        body = b"".join((kept[4], text, kept[5], text, kept[6]))
        headers = (*reply.headers, ("Location", "/v1/jobs/" + job.id))
        return _response(reply.status_code, body, "application/json", headers)

    def _keep_submit(self, reply: Reply, job: JobView) -> HttpResponse:
        """``render_answer``'s answer to the submit ``reply``, and the pieces of its body around
        the id kept for ``job``'s spec with its status, poll hint, estimate and message, when the answer
        made of them for ``job`` is the answer itself (not when the message holds the mark)."""
        headers = (*reply.headers, ("Location", f"/v1/jobs/{job.id}"))
        response = json_response(reply.status_code, _submitted(job, job.id), headers)
        marked = json_response(reply.status_code, _submitted(job, _ID_MARK)).body
        pieces = marked.split(_ID_MARK_JSON)
        if len(pieces) == 3 and type(job.id) is str:
            text = _encode_text(job.id)[1:-1].encode("utf-8", "backslashreplace")
            if b"".join((pieces[0], text, pieces[1], text, pieces[2])) == response.body:
                kept = self._submit_pieces
                if len(kept) >= _PIECES_KEPT:
                    kept.clear()
                kept[job.spec_index] = (
                    job.status,
                    job.poll_after,
                    job.estimated_duration,
                    job.message,
                    *pieces,
                )
        return response

    def _status(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        """``render_answer(reply, http)`` for a status read of ``job = reply.job``:
        ``json_response(200, self.job(job), reply.headers)``, the same answer, from the pieces kept
        for the job's id: what ``job`` shows of a job but its elapsed time depends on the step
        it is at alone (the same objects from the engine's table of steps while it stays there).
        So the body is the pieces around ``elapsed_seconds`` made once per step, joined around
        that number, as long as every other input is the very object they were made from."""
        job = reply.job
        assert job is not None
        kept = self._pieces.get(job.id)
        if (
            kept is None
            or kept[0] is not job.status
            or kept[1] is not job.progress
            or kept[2] is not job.poll_after
            or kept[3] is not job.message
            or kept[4] is not job.result
            or kept[5] is not job.error
            or job.summary is not None
        ):
            kept = self._keep(job)
        elapsed = round(job.now - job.created_at, 3)  # job.elapsed
        if kept is None or type(elapsed) is not float or not math.isfinite(elapsed):
            return json_response(200, self.job(job), reply.headers)
        body = b"".join((kept[6], float.__repr__(elapsed).encode(), kept[7]))
        return _response(200, body, "application/json", tuple(reply.headers))

    def _keep(self, job: JobView) -> _Pieces | None:
        """The pieces of ``job``'s JSON around its ``elapsed_seconds``, kept for its id; None
        (and nothing kept) for a job with a summary, or one whose text holds the mark."""
        if job.summary is not None:
            return None
        payload = self.job(job)
        payload["elapsed_seconds"] = _MARK
        pieces = json_response(200, payload).body.split(_MARK_JSON)
        if len(pieces) != 2:
            return None
        kept = (
            job.status,
            job.progress,
            job.poll_after,
            job.message,
            job.result,
            job.error,
            pieces[0],
            pieces[1],
        )
        if len(self._pieces) >= _PIECES_KEPT:
            self._pieces.clear()
        self._pieces[job.id] = kept
        return kept

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        return generic_webhook_message(send)

    def job(self, job: JobView) -> dict[str, Any]:
        out: dict[str, Any] = {"job_id": job.id, "status": job.status, "done": job.done}
        if job.progress is not None:
            out["progress_percent"] = job.progress
        out["elapsed_seconds"] = round(job.elapsed, 3)
        if job.poll_after is not None:
            out["poll_after_seconds"] = _seconds(job.poll_after)
        out["message"] = job.message
        if job.result is not None:
            result = job.result
            out["result"] = {
                "content_url": result.url or f"/v1/jobs/{job.id}/content",
                "size_bytes": result.size_bytes,
                "duration_seconds": result.duration_seconds,
                "width": result.width,
                "height": result.height,
            }
        if job.error is not None:
            out["error"] = {"code": job.error.code, "message": job.error.message}
        if job.summary is not None:
            out["summary"] = dict(job.summary)
        return out
