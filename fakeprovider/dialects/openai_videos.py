"""The ``openai-videos`` dialect: OpenAI's Videos API (Sora) as ``openai`` 3.57 speaks it.

A sunset API: OpenAI shut it down on 2026-09-24 (every ``videos`` method of the SDK carries
that deprecation since 3.1.0). Kept for clients of the old API.

Point the SDK at ``OpenAI(base_url=f"{fake}/v1", api_key=...)``. Create is multipart (the
SDK always sends multipart, even without a file); JSON is accepted too. The provider has no
cancel: ``DELETE /v1/videos/{id}`` is journaled as ``cancel`` (a running job stops, a finished
one is reported deleted). The ``cancelled`` engine status, which OpenAI does not have, is shown
as ``failed`` with ``error.code == "cancelled"``.

Webhooks are OpenAI's events, ``{"id": "evt_...", "object": "event", "type", "created_at",
"data": {"id": "video_..."}}``, signed per Standard Webhooks (what ``client.webhooks.unwrap``
and ``verify_signature`` check). OpenAI sends ``video.completed`` and ``video.failed`` only:
the queued and processing events are not sent in this dialect.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

from ..http import HttpRequest, HttpResponse, json_response
from ..messages import ApiError, JobView, Reply, Request
from ..webhooks import Outgoing, WebhookMessage, signed_message
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

_STATUS = {
    "queued": "queued",
    "processing": "in_progress",
    "succeeded": "completed",
    "completed_with_errors": "completed",
    "failed": "failed",
    "cancelled": "failed",
}
#: Engine event -> OpenAI webhook event (a cancelled video is shown as failed).
_EVENTS = {
    "job.succeeded": "video.completed",
    "job.completed_with_errors": "video.completed",
    "job.failed": "video.failed",
    "job.cancelled": "video.failed",
}
_SECONDS = ("4", "8", "12")
_SIZES = ("720x1280", "1280x720", "1024x1792", "1792x1024")
_VARIANTS = ("video", "thumbnail", "spritesheet")


def _invalid_value(message: str, body: dict[str, Any] | None = None) -> BadRequest:
    return BadRequest(400, "invalid_value", message, body=body)


def _error_type(status: int) -> str:
    if status == 429:
        return "requests"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


class OpenAIVideosDialect(Dialect):
    name = "openai-videos"
    headers_read = Dialect.headers_read
    keeps_status_answers = True  # its status answers show no passing time
    note = "sunset API: OpenAI shut it down on 2026-09-24"
    late_cancel_succeeds = True
    #: ``openai-poll-after-ms`` comes on status reads only (``videos.poll`` reads it from
    #: ``retrieve``); nothing shows OpenAI sending it on the create answer.
    poll_hints = frozenset({"status"})
    routes = (
        Route("POST", "/v1/videos", "submit"),
        Route("GET", "/v1/videos", "list"),
        Route("GET", "/v1/videos/{job_id}", "status"),
        Route("DELETE", "/v1/videos/{job_id}", "cancel"),
        Route("GET", "/v1/videos/{job_id}/content", "content"),
    )

    def new_job_id(self, seed: int, number: int) -> str:
        return "video_" + _common.digest(seed, number, self.name).hex()[:32]

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        job_id = params.get("job_id")
        if route.kind == "content":
            variant = http.query.get("variant", "video")
            if variant not in _VARIANTS:
                message = f"Invalid variant {variant!r}; expected one of {', '.join(_VARIANTS)}."
                raise BadRequest(400, "invalid_value", message)
            if variant != "video":
                message = f"fakeprovider serves only variant='video' (got {variant!r})."
                raise BadRequest(400, "unsupported_variant", message)
        if route.kind != "submit":
            return route_request(route.kind, job_id, common)
        return submit_request(common, self._create_body(http))

    def _create_body(self, http: HttpRequest) -> dict[str, Any]:
        """The create's fields; every refusal is a 400 ``invalid_value``."""
        ctype = _common.media_type(http)
        if ctype == "multipart/form-data":
            try:
                body = _common.read_multipart(http)
            except BadRequest as refused:
                raise _invalid_value(refused.message) from None
            if body is None:
                raise _invalid_value("The multipart/form-data body could not be parsed.")
        elif ctype == "application/json":
            try:
                body = read_json_object(http)
            except BadRequest as refused:
                raise _invalid_value(refused.message) from None
        else:
            shown = ctype or "none"
            raise _invalid_value(
                f"Send the body as multipart/form-data or application/json (got {shown})."
            )
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise _invalid_value("'prompt' is required and must be a non-empty string.", body)
        for key, allowed in (("seconds", _SECONDS), ("size", _SIZES)):
            if key in body and str(body[key]) not in allowed:
                message = f"Invalid '{key}' {body[key]!r}; expected one of {', '.join(allowed)}."
                raise _invalid_value(message, body)
        if "model" in body and not isinstance(body["model"], str):
            raise _invalid_value("'model' must be a string.", body)
        return body

    # -- rendering ------------------------------------------------------------------------

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        kind = reply.request.kind
        job = reply.job
        if kind == "list":
            return self._list(reply, http)
        assert job is not None
        if kind == "content":
            return video_response(reply)
        if kind == "cancel":
            return self._deleted(job, reply)
        headers = reply.headers
        if kind == "status" and not job.done and job.poll_after is not None:
            hint = max(1, math.ceil(job.poll_after * 1000))
            headers = (*headers, ("openai-poll-after-ms", str(hint)))
        return json_response(200, self.video(job), headers)

    def _deleted(self, job: JobView, reply: Reply) -> HttpResponse:
        payload = {"id": job.id, "object": "video.deleted", "deleted": True}
        return json_response(200, payload, reply.headers)

    def _list(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        videos = [self.video(j) for j in reply.jobs]
        if http.query.get("order", "desc") != "asc":
            videos.reverse()
        after = http.query.get("after")
        if after:
            ids = [v["id"] for v in videos]
            videos = videos[ids.index(after) + 1 :] if after in ids else []
        try:
            limit = max(1, min(100, int(http.query.get("limit", "20"))))
        except ValueError:
            limit = 20
        page, has_more = videos[:limit], len(videos) > limit
        payload = {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": has_more,
        }
        return json_response(200, payload, reply.headers)

    def video(self, job: JobView) -> dict[str, Any]:
        request = job.request
        error: dict[str, str] | None = None
        if job.error is not None:
            error = {"code": job.error.code, "message": job.error.message}
        elif job.status == "cancelled":
            error = {"code": "cancelled", "message": job.message}
        completed = job.completed_at
        expires = None
        if completed is not None and job.result is not None:
            expires = _common.unix_time(self.epoch, completed) + 24 * 3600
        return {
            "id": job.id,
            "object": "video",
            "created_at": _common.unix_time(self.epoch, job.created_at),
            "completed_at": None if completed is None else _common.unix_time(self.epoch, completed),
            "error": error,
            "expires_at": expires,
            "model": str(request.get("model") or "sora-2"),
            "progress": _common.progress_percent(job),
            "prompt": request.get("prompt"),
            "remixed_from_video_id": None,
            "seconds": str(request.get("seconds") or "4"),
            "size": str(request.get("size") or "720x1280"),
            "status": _STATUS[job.status],
        }

    # -- webhooks -------------------------------------------------------------------------

    def webhook_event(self, event: str, job: JobView) -> str | None:
        return _EVENTS.get(event)

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        delivery = send.delivery
        digest = hashlib.sha256(f"{self.name}:{delivery.webhook_id}".encode()).hexdigest()
        payload = {
            "id": f"evt_{digest[:32]}",
            "object": "event",
            "created_at": _common.unix_time(send.epoch, delivery.change_at),
            "type": _EVENTS[delivery.event],
            "data": {"id": delivery.job_id},
        }
        return signed_message(payload, send)

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        payload = {
            "error": {
                "message": error.message,
                "type": _error_type(status),
                "param": None,
                "code": error.code,
            }
        }
        return json_response(status, payload, tuple(headers))
