"""The ``luma`` dialect: Luma Dream Machine generations as ``lumaai`` 1.21 speaks them.

Point the SDK at ``LumaAI(auth_token=..., base_url=f"{fake}/dream-machine/v1")``. Luma has no
cancel: ``DELETE /generations/{id}`` is journaled as ``cancel`` (a running job stops, a finished
one is deleted; 204 either way). Luma has no ``cancelled`` state: it is shown as ``failed`` with
the cancellation in ``failure_reason``. ``assets.video`` is a URL on the fake's
``/files/{id}.mp4`` route, the stand-in for Luma's CDN.

Callbacks POST the generation exactly as ``GET /generations/{id}`` shows it, for every change
of state (Luma sends "any and all updates"), unsigned: Luma documents no signature, so a
scenario's ``forged:`` and ``stale:`` send nothing in this dialect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..http import HttpRequest, HttpResponse, json_response
from ..messages import ApiError, JobView, Reply, Request
from ..webhooks import Outgoing, WebhookMessage, unsigned_message
from . import _common
from .base import (
    BadRequest,
    Dialect,
    Route,
    read_json_object,
    route_request,
    submit_request,
    video_response,
)

PREFIX = "/dream-machine/v1"

_STATE = {
    "queued": "queued",
    "processing": "dreaming",
    "succeeded": "completed",
    "completed_with_errors": "completed",
    "failed": "failed",
    "cancelled": "failed",
}
_STRINGS = ("prompt", "aspect_ratio", "duration", "resolution", "callback_url", "generation_type")


class LumaDialect(Dialect):
    name = "luma"
    headers_read = Dialect.headers_read
    keeps_status_answers = True  # its status answers show no passing time
    late_cancel_succeeds = True
    poll_hints = False
    routes = (
        Route("POST", f"{PREFIX}/generations", "submit"),
        Route("POST", f"{PREFIX}/generations/video", "submit"),
        Route("GET", f"{PREFIX}/generations", "list"),
        Route("GET", f"{PREFIX}/generations/{{job_id}}", "status"),
        Route("DELETE", f"{PREFIX}/generations/{{job_id}}", "cancel"),
        _common.FILE_ROUTE,
    )

    def new_job_id(self, seed: int, number: int) -> str:
        return _common.uuid_id(seed, number, self.name)

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        if route.kind != "submit":
            return route_request(route.kind, params.get("job_id"), common)
        body = read_json_object(http)
        why = self._invalid(body)
        if why is not None:
            raise BadRequest(400, "invalid_request", why, body=body)
        return submit_request(common, body, body.get("callback_url"))

    @staticmethod
    def _invalid(body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "'model' is required (for example 'ray-2')."
        for key in _STRINGS:
            if key in body and body[key] is not None and not isinstance(body[key], str):
                return f"'{key}' must be a string."
        prompt = body.get("prompt")
        if not (isinstance(prompt, str) and prompt.strip()) and not isinstance(
            body.get("keyframes"), dict
        ):
            return "Send a non-empty 'prompt' or 'keyframes'."
        return None

    # -- rendering ------------------------------------------------------------------------

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        kind = reply.request.kind
        job = reply.job
        if kind == "list":
            return self._list(reply, http)
        assert job is not None
        if kind == "cancel":
            return _common.no_content(reply)
        if kind == "content":
            return video_response(reply)
        return json_response(
            201 if kind == "submit" else 200, self.generation(job, http), reply.headers
        )

    def _list(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        try:
            limit = max(1, int(http.query.get("limit", "100")))
            offset = max(0, int(http.query.get("offset", "0")))
        except ValueError:
            limit, offset = 100, 0
        everything = [self.generation(j, http) for j in reversed(reply.jobs)]
        page = everything[offset : offset + limit]
        payload = {
            "generations": page,
            "count": len(page),
            "has_more": offset + limit < len(everything),
            "limit": limit,
            "offset": offset,
        }
        return json_response(200, payload, reply.headers)

    def generation(self, job: JobView, http: HttpRequest) -> dict[str, Any]:
        failure = None
        if job.error is not None:
            failure = job.error.message
        elif job.status == "cancelled":
            failure = f"cancelled: {job.message}"
        assets = {"video": _common.file_url(http, job)} if job.result is not None else None
        return {
            "id": job.id,
            "generation_type": "video",
            "state": _STATE[job.status],
            "failure_reason": failure,
            "created_at": _common.iso_time(self.epoch, job.created_at),
            "assets": assets,
            "model": job.request.get("model"),
            "request": dict(job.request),
        }

    # -- callbacks ------------------------------------------------------------------------

    webhook_signed = False

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        job = send.delivery.job
        return unsigned_message(self.generation(job, self.webhook_request(send.base_url)))

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        return json_response(status, {"detail": error.message}, tuple(headers))
