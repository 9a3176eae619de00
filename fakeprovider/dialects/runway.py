"""The ``runway`` dialect: Runway's task API as ``runwayml`` 5.24 speaks it.

Point the SDK at ``RunwayML(base_url=fake, api_key=...)`` (no ``/v1``: paths carry it). Every
``/v1`` request must carry ``X-Runway-Version: 2024-11-06``. ``DELETE /v1/tasks/{id}`` cancels a
running task and deletes a finished one (204 either way). Task outputs are URLs on the fake's
``/files/{id}.mp4`` route, the stand-in for Runway's CDN.

A create over the scenario's ``concurrency.max_active_jobs`` is accepted, as Runway accepts it,
and shows ``THROTTLED`` until a running task ends; its timeline starts then.

Runway's API has no webhooks (``runwayml`` 5.24 has no callback parameter): a scenario's
``webhooks:`` block sends the generic shape, for receivers that want one anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..http import HttpRequest, HttpResponse, json_response
from ..messages import ApiError, JobView, Reply, Request
from ..webhooks import Outgoing, WebhookMessage
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
from .generic import generic_webhook_message

API_VERSION = "2024-11-06"

_STATUS = {
    "queued": "PENDING",
    "processing": "RUNNING",
    "succeeded": "SUCCEEDED",
    "completed_with_errors": "SUCCEEDED",
    "failed": "FAILED",
    "cancelled": "CANCELLED",
}
#: Body field each create route needs besides ``model``.
_REQUIRED = {
    "/v1/text_to_video": "promptText",
    "/v1/image_to_video": "promptImage",
    "/v1/video_to_video": "videoUri",
}
_CREDITS_PER_SECOND = 10


class RunwayDialect(Dialect):
    name = "runway"
    headers_read = Dialect.headers_read | {"x-runway-version"}
    keeps_status_answers = True  # its status answers show no passing time
    late_cancel_succeeds = True
    poll_hints = False
    queues_at_capacity = True
    routes = (
        Route("POST", "/v1/text_to_video", "submit"),
        Route("POST", "/v1/image_to_video", "submit"),
        Route("POST", "/v1/video_to_video", "submit"),
        Route("GET", "/v1/tasks/{job_id}", "status"),
        Route("DELETE", "/v1/tasks/{job_id}", "cancel"),
        _common.FILE_ROUTE,
    )

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        # Runway has no webhooks: a scenario's ``webhooks:`` block sends the generic shape
        return generic_webhook_message(send)

    def new_job_id(self, seed: int, number: int) -> str:
        return _common.uuid_id(seed, number, self.name)

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        job_id = params.get("job_id")
        if route.template.startswith("/v1/"):
            version = http.headers.get("x-runway-version")
            if version is None:
                message = (
                    f"Missing the X-Runway-Version header; send X-Runway-Version: {API_VERSION}."
                )
                raise BadRequest(400, "missing_version", message)
            if version != API_VERSION:
                message = (
                    f"Unsupported X-Runway-Version {version!r}; this API speaks {API_VERSION}."
                )
                raise BadRequest(400, "bad_version", message)
        if route.kind != "submit":
            return route_request(route.kind, job_id, common)
        body = read_json_object(http)
        why = self._invalid(route.template, body)
        if why is not None:
            raise BadRequest(400, "validation_failed", why, body=body)
        neutral = dict(body)
        prompt = body.get("promptText")
        if isinstance(prompt, str):
            neutral.setdefault("prompt", prompt)
        return submit_request(common, neutral)

    @staticmethod
    def _invalid(template: str, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "Validation of body failed: 'model' is required and must be a string."
        field = _REQUIRED[template]
        value = body.get(field)
        if field == "promptText":
            if not isinstance(value, str) or not value.strip():
                return "Validation of body failed: 'promptText' must be a non-empty string."
        elif not isinstance(value, str | list) or not value:
            return f"Validation of body failed: '{field}' is required."
        if "ratio" in body and not isinstance(body["ratio"], str):
            return "Validation of body failed: 'ratio' must be a string like '1280:720'."
        duration = body.get("duration")
        if duration is not None and (isinstance(duration, bool) or not isinstance(duration, int)):
            return "Validation of body failed: 'duration' must be an integer number of seconds."
        return None

    # -- rendering ------------------------------------------------------------------------

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        kind = reply.request.kind
        job = reply.job
        assert job is not None
        if kind == "cancel":
            return _common.no_content(reply)
        if kind == "content":
            return video_response(reply)
        if kind == "submit":
            payload = {"id": job.id, "estimatedCost": {"credits": self._credits(job)}}
            return json_response(200, payload, reply.headers)
        return json_response(200, self.task(job, http), reply.headers)

    def _credits(self, job: JobView) -> int:
        duration = job.request.get("duration")
        seconds = duration if isinstance(duration, int) and not isinstance(duration, bool) else 5
        return seconds * _CREDITS_PER_SECOND

    def task(self, job: JobView, http: HttpRequest) -> dict[str, Any]:
        status = "THROTTLED" if job.throttled else _STATUS[job.status]
        out: dict[str, Any] = {
            "id": job.id,
            "createdAt": _common.iso_time(self.epoch, job.created_at),
            "status": status,
        }
        cost = {"credits": self._credits(job)}
        if status in ("PENDING", "THROTTLED", "RUNNING"):
            out["estimatedCost"] = cost
        else:
            out["cost"] = cost
        if status == "RUNNING":
            out["progress"] = round(_common.progress_percent(job) / 100, 4)
        if status == "SUCCEEDED":
            out["output"] = [_common.file_url(http, job)]
        if status == "FAILED":
            assert job.error is not None
            out["failure"] = job.error.message
            out["failureCode"] = job.error.code
        return out

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        return json_response(status, {"error": error.message, "code": error.code}, tuple(headers))
