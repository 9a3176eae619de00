"""The ``gemini`` dialect: Gemini API video through the Interactions API, as ``google-genai`` 3.x
speaks it (``client.interactions``, generated under ``google/genai/_gaos/``).

Point the SDK at ``genai.Client(api_key=..., http_options=HttpOptions(base_url=f"{fake}/"))``
(the key goes in ``x-goog-api-key``). Create is ``POST /{version}/interactions`` with
``background: true`` (any version segment: the SDK sends ``v1`` by default, the API documents
``v1beta``); a status read is ``GET /{version}/interactions/{id}``; ``POST .../{id}/cancel``
cancels (journal kind ``cancel``) and ``DELETE .../{id}`` deletes (journaled as ``cancel`` too:
a running job stops, a finished one is reported deleted with ``{}``). Every success is 200:
the SDK accepts nothing else.

Statuses: ``queued``, ``in_progress``, ``completed``, ``failed``, ``cancelled``; a job that
completed with errors is ``incomplete`` (the Interactions status for a run that stopped short
but has output), with its video and an ``errors`` entry. A finished interaction carries the
video in ``steps[-1]`` (``{"type": "model_output", "content": [{"type": "video", ...}]}``,
read back by the SDK as ``interaction.output_video``): inline as base64 ``data`` by default, so
the status read that shows it completed is the retrieval; by ``uri`` (the fake's
``/files/{id}.mp4``, or the scenario's ``result.url``) when the create asked for
``response_format: {"type": "video", "delivery": "uri"}``, and then the download is.

No poll hint: the Interactions API sends none. Webhooks: ``webhook_config.uris[0]`` receives
``interaction.completed`` and ``interaction.failed`` as Standard Webhooks signed events
``{"type", "timestamp", "data": {"id", "status", "user_metadata"?}}`` (the SDK has no event type
or verifier to pin the body against: this shape is the fake's).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from ..http import HttpRequest, HttpResponse, json_response
from ..messages import ApiError, JobView, Reply, Request, video_bytes
from ..webhooks import Outgoing, WebhookMessage, iso_timestamp, signed_message
from . import _common
from .base import (
    BadRequest,
    Dialect,
    Route,
    cancel_after_end,
    read_json_object,
    route_request,
    submit_request,
    video_response,
)
from .google_veo import _STATUS_NAMES

_STATUS = {
    "queued": "queued",
    "processing": "in_progress",
    "succeeded": "completed",
    "completed_with_errors": "incomplete",
    "failed": "failed",
    "cancelled": "cancelled",
}
#: Engine event -> Interactions webhook event (queued, processing and cancelled send none).
_EVENTS = {
    "job.succeeded": "interaction.completed",
    "job.completed_with_errors": "interaction.completed",
    "job.failed": "interaction.failed",
}
_DELIVERIES = ("inline", "uri")


def _invalid(message: str, body: dict[str, Any] | None = None) -> BadRequest:
    return BadRequest(400, "invalid_argument", message, body=body)


def _video_format(body: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` entry of type ``video`` (an object or one in a list), if any."""
    formats = body.get("response_format")
    candidates = formats if isinstance(formats, list) else [formats]
    for entry in candidates:
        if isinstance(entry, dict) and entry.get("type") == "video":
            return entry
    return None


def _prompt(value: Any) -> str | None:
    """The text of an interaction's ``input``: a string, or the text parts of content."""
    if isinstance(value, str):
        return value if value.strip() else None
    parts = value if isinstance(value, list) else [value]
    texts: list[str] = []
    for part in parts:
        if isinstance(part, dict):
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part.get("content"), list | dict | str):
                inner = _prompt(part["content"])
                if inner:
                    texts.append(inner)
    joined = " ".join(t for t in texts if t.strip())
    return joined or None


def _error(
    status: int, name: str, message: str, headers: Sequence[tuple[str, str]]
) -> HttpResponse:
    """The Interactions error body: ``{"error": {"code": <STATUS_NAME>, "message"}}`` (the
    SDK's error schema has a string ``code``)."""
    return json_response(status, {"error": {"code": name, "message": message}}, tuple(headers))


class GeminiDialect(Dialect):
    name = "gemini"
    headers_read = Dialect.headers_read | {"x-goog-api-key"}
    keeps_status_answers = True  # its status answers show no passing time
    poll_hints = False
    routes = (
        Route("POST", "/{version}/interactions", "submit"),
        Route("GET", "/{version}/interactions/{job_id}", "status"),
        Route("POST", "/{version}/interactions/{job_id}/cancel", "cancel"),
        Route("DELETE", "/{version}/interactions/{job_id}", "cancel"),
        _common.FILE_ROUTE,
    )

    def new_job_id(self, seed: int, number: int) -> str:
        return "v1_" + _common.digest(seed, number, self.name).hex()[:40]

    def credential(self, http: HttpRequest) -> str | None:
        return http.headers.get("x-goog-api-key") or http.bearer

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        job_id = params.get("job_id")
        if route.kind == "status" and http.query.get("stream", "false").lower() == "true":
            raise _invalid("fakeprovider does not stream interactions: read with stream=false.")
        if route.kind != "submit":
            return route_request(route.kind, job_id, common)
        body = read_json_object(http)
        if body.get("stream") is True:
            raise _invalid("fakeprovider does not stream interactions: send stream: false.", body)
        if body.get("background") is not True:
            message = (
                "Video generation runs in the background: send background: true and poll"
                " the interaction."
            )
            raise _invalid(message, body)
        if not isinstance(body.get("model"), str) or not body["model"]:
            if "agent" in body:
                raise _invalid("fakeprovider serves model interactions, not agents.", body)
            raise _invalid("'model' is required (for example 'veo-3.1-generate-preview').", body)
        prompt = _prompt(body.get("input"))
        if prompt is None:
            raise _invalid("'input' is required: a prompt string or content with text.", body)
        video = _video_format(body)
        if video is not None and video.get("delivery", "inline") not in _DELIVERIES:
            message = (
                f"Invalid response_format delivery {video.get('delivery')!r};"
                f" expected one of {', '.join(_DELIVERIES)}."
            )
            raise _invalid(message, body)
        neutral = dict(body)
        neutral.setdefault("prompt", prompt)
        hooks = body.get("webhook_config")
        uris = hooks.get("uris") if isinstance(hooks, dict) else None
        callback = uris[0] if isinstance(uris, list) and uris and isinstance(uris[0], str) else None
        return submit_request(common, neutral, callback)

    # -- the result -----------------------------------------------------------------------

    @staticmethod
    def _by_uri(job: JobView) -> bool:
        video = _video_format(dict(job.request))
        return video is not None and video.get("delivery") == "uri"

    def inline_result(self, request: Request, job: JobView) -> bool:
        return request.kind in ("submit", "status") and not self._by_uri(job)

    # -- rendering ------------------------------------------------------------------------

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        job = reply.job
        assert job is not None
        if reply.request.kind == "content":
            return video_response(reply)
        if reply.request.kind == "cancel" and reply.request.method == "DELETE":
            return json_response(200, {}, reply.headers)
        return json_response(200, self.interaction(job, http), reply.headers)

    def render_refusal(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        # deleting a finished interaction deletes it; cancelling one is refused
        if cancel_after_end(reply) and reply.request.method == "DELETE":
            return json_response(200, {}, reply.headers)
        assert reply.error is not None
        if reply.status_code == 409:
            # Google APIs answer FAILED_PRECONDITION with 400; a 409 (ABORTED) is one the SDK
            # retries four times, which a refusal that cannot change must not invite
            return _error(400, "FAILED_PRECONDITION", reply.error.message, reply.headers)
        return super().render_refusal(reply, http)

    def interaction(self, job: JobView, http: HttpRequest) -> dict[str, Any]:
        request = job.request
        out: dict[str, Any] = {
            "id": job.id,
            "status": _STATUS[job.status],
            "model": request.get("model"),
            "created": self._time(job.created_at),
            "updated": self._time(job.status_since),
        }
        if isinstance(request.get("webhook_config"), dict):
            out["webhook_config"] = request["webhook_config"]
        if job.error is not None:
            out["errors"] = [{"code": job.error.code, "message": job.error.message}]
        if job.result is not None and job.status in ("succeeded", "completed_with_errors"):
            out["steps"] = [{"type": "model_output", "content": [self._video(job, http)]}]
            if job.summary is not None:
                out["errors"] = [{"code": "incomplete", "message": str(dict(job.summary))}]
        return out

    def _video(self, job: JobView, http: HttpRequest) -> dict[str, Any]:
        assert job.result is not None
        if self._by_uri(job):
            return {"type": "video", "uri": _common.file_url(http, job), "mime_type": "video/mp4"}
        data = video_bytes(job.id, job.result.size_bytes)
        return {"type": "video", "data": base64.b64encode(data).decode(), "mime_type": "video/mp4"}

    def _time(self, reading: float) -> str:
        return _common.iso_time(self.epoch, reading)

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        name = _STATUS_NAMES.get(status, "UNKNOWN" if status >= 500 else "FAILED_PRECONDITION")
        return _error(status, name, error.message, headers)

    # -- webhooks -------------------------------------------------------------------------

    def webhook_event(self, event: str, job: JobView) -> str | None:
        return _EVENTS.get(event)

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        delivery = send.delivery
        job = delivery.job
        data: dict[str, Any] = {"id": delivery.job_id, "status": _STATUS[job.status]}
        hooks = job.request.get("webhook_config")
        if isinstance(hooks, dict) and isinstance(hooks.get("user_metadata"), dict):
            data["user_metadata"] = hooks["user_metadata"]
        payload = {
            "type": _EVENTS[delivery.event],
            "timestamp": iso_timestamp(send.epoch + delivery.change_at),
            "data": data,
        }
        return signed_message(payload, send)
