"""The ``generic`` dialect: the wire API of the README's "generic wire API" section."""

from __future__ import annotations

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
#: Jobs whose pieces are kept at most (forgotten all at once when full).
_PIECES_KEPT = 1024


class GenericDialect(Dialect):
    name = "generic"

    def __init__(self, settings: RunSettings | None = None) -> None:
        super().__init__(settings)
        self._pieces: dict[str, _Pieces] = {}

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
            poll_after = _seconds(job.poll_after)
            done = job.done
            payload = {
                "job_id": job.id,
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
                "status_url": f"/v1/jobs/{job.id}",
            }
            headers = (*reply.headers, ("Location", f"/v1/jobs/{job.id}"))
            return json_response(reply.status_code, payload, headers)
        return self._status(reply, http)

    def renderer(self, kind: RequestKind) -> Callable[[Reply, HttpRequest], HttpResponse]:
        cls = type(self)
        if (
            kind == "status"
            and cls.render is Dialect.render
            and cls.render_answer is GenericDialect.render_answer
            and not self.keeps_status_answers
        ):
            return self._status
        return super().renderer(kind)

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
