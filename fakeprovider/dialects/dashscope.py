"""The ``dashscope`` dialect: Wan video synthesis on Alibaba Cloud DashScope, as ``dashscope`` 2.0.2
speaks it (the 1.x ``VideoSynthesis`` calls and the v2 ``Client().videos.jobs`` API).

Point the SDK at the fake with ``DASHSCOPE_HTTP_BASE_URL=f"{fake}/api/v1"`` (1.x, also
``dashscope.base_http_api_url``) or ``dashscope.v2.Client(base_url=f"{fake}/api/v1")``. Both
generations speak the same wire:

- ``POST /api/v1/services/aigc/video-generation/video-synthesis`` (``image2video`` for the
  key-frame models) with ``X-DashScope-Async: enable`` and ``{model, input: {prompt?,
  img_url?, media?...}, parameters?}`` answers ``{"request_id", "output": {"task_id",
  "task_status": "PENDING"}}``;
- ``GET /api/v1/tasks/{id}``: ``output.task_status`` one of ``PENDING``, ``RUNNING``,
  ``SUCCEEDED``, ``FAILED``, ``CANCELED``; the video at ``output.video_url``. A task id the
  gateway does not know answers **200** with ``task_status: UNKNOWN`` (journaled as a read of
  an unknown job: no job status, error code ``job_not_found``);
- ``POST /api/v1/tasks/{id}/cancel``: cancels a ``PENDING`` task only;
- ``GET /api/v1/tasks``: ``{"request_id", "tasks", "total", "page_no", "page_size"}``.

Errors are ``{"request_id", "code", "message"}``. DashScope sends no poll hint and has no
webhooks: a scenario's ``webhooks:`` block sends the generic shape.
"""

from __future__ import annotations

import re
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
    new_request,
    read_json_object,
    route_request,
    submit_request,
    video_response,
)
from .generic import generic_webhook_message

PREFIX = "/api/v1"

_STATUS = {
    "queued": "PENDING",
    "processing": "RUNNING",
    "succeeded": "SUCCEEDED",
    "completed_with_errors": "SUCCEEDED",
    "failed": "FAILED",
    "cancelled": "CANCELED",
}
_ENGINE_STATUS = {
    "PENDING": "queued",
    "RUNNING": "processing",
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
    "CANCELED": "cancelled",
}
_CANCELLABLE = frozenset({"queued"})
_SUBMIT = re.compile(
    r"^/api/v1/services/aigc/(?P<task>video-generation|image2video)/video-synthesis$"
)
_SUBMIT_ROUTE = Route("POST", f"{PREFIX}/services/aigc/{{task}}/video-synthesis", "submit")
#: DashScope's error code for each HTTP status the fake answers.
_CODES = {
    400: "InvalidParameter",
    401: "InvalidApiKey",
    403: "AccessDenied",
    404: "NotFound",
    405: "InvalidParameter",
    409: "InvalidParameter",
    413: "InvalidParameter",
    415: "InvalidParameter",
    422: "InvalidParameter",
    429: "Throttling.RateQuota",
}
_NOT_PENDING = "Failed to cancel the task, please confirm if the task is in PENDING status."
_SYNC_REFUSED = "current user api does not support synchronous calls"


class DashScopeDialect(Dialect):
    name = "dashscope"
    headers_read = Dialect.headers_read | {"x-dashscope-async"}
    poll_hints = False
    routes = (
        _SUBMIT_ROUTE,
        Route("GET", f"{PREFIX}/tasks", "list"),
        Route("GET", f"{PREFIX}/tasks/{{job_id}}", "status"),
        Route("POST", f"{PREFIX}/tasks/{{job_id}}/cancel", "cancel"),
        _common.FILE_ROUTE,
    )

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        # DashScope has no webhooks: a scenario's ``webhooks:`` block sends the generic shape
        return generic_webhook_message(send)

    def new_job_id(self, seed: int, number: int) -> str:
        return _common.uuid_id(seed, number, self.name)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        found = _SUBMIT.match(path)
        if found is not None:
            return (_SUBMIT_ROUTE, found.groupdict()) if method == "POST" else None
        return super().match(method, path)

    def allowed_methods(self, path: str) -> list[str]:
        return ["POST"] if _SUBMIT.match(path) else super().allowed_methods(path)

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        job_id = params.get("job_id")
        if route.kind == "cancel":
            return new_request(kind="cancel", job_id=job_id, cancel_from=_CANCELLABLE, **common)
        if route.kind == "list":
            return self._list(http, common)
        if route.kind != "submit":
            return route_request(route.kind, job_id, common)
        if http.headers.get("x-dashscope-async", "").lower() != "enable":
            raise BadRequest(403, "sync_not_supported", _SYNC_REFUSED)
        body = read_json_object(http)
        problem = self._invalid(body)
        if problem is not None:
            raise BadRequest(400, "invalid_parameter", problem, body=body)
        neutral = dict(body)
        prompt = body["input"].get("prompt")
        if isinstance(prompt, str):
            neutral.setdefault("prompt", prompt)
        return submit_request(common, neutral)

    @staticmethod
    def _invalid(body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "Model not exist."
        data = body.get("input")
        if not isinstance(data, dict):
            return "Input should be a valid dictionary."
        prompt = data.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            return "Input.prompt should be a valid string."
        if not (isinstance(prompt, str) and prompt.strip()) and not any(
            data.get(key) for key in ("img_url", "first_frame_url", "media")
        ):  # an input image is looked for only without a prompt
            return "Field required: input.prompt or an input image."
        parameters = body.get("parameters", {})
        if not isinstance(parameters, dict):
            return "Parameters should be a valid dictionary."
        duration = parameters.get("duration")
        if duration is not None and (isinstance(duration, bool) or not isinstance(duration, int)):
            return "Parameters.duration should be a valid integer."
        return None

    def _list(self, http: HttpRequest, common: dict[str, Any]) -> Request:
        query = http.query
        message = "page_no must be 1 or more and page_size between 1 and 100."
        page = _common.page_window(query, "page_no", "page_size", 100, message)
        status = query.get("status")
        wanted_status = _ENGINE_STATUS.get(status or "")
        if status is not None and wanted_status is None:
            shown = ", ".join(_ENGINE_STATUS)
            raise BadRequest(400, "invalid_parameter", f"status must be one of {shown}.")
        model = query.get("model_name")

        def wanted(job: JobView) -> bool:
            return (status is None or _STATUS[job.status] == status) and (
                model is None or job.request.get("model") == model
            )

        # the engine keeps jobs by status: a status filter alone costs a page, not every job
        statuses = None if status is None else frozenset(s for s in _STATUS if _STATUS[s] == status)
        return new_request(
            kind="list",
            select=None if model is None else wanted,
            statuses=statuses,
            page=page,
            newest_first=True,
            **common,
        )

    # -- rendering ------------------------------------------------------------------------

    def _request_id(self, reply: Reply) -> str:
        return _common.uuid_id(0, reply.seq, "dashscope-request")

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        kind = reply.request.kind
        request_id = self._request_id(reply)
        if kind == "list":
            tasks = [self.output(job, http) for job in reply.jobs]
            page_no, page_size = 1, 10
            if reply.request.page is not None:
                offset, page_size = reply.request.page
                page_no = offset // page_size + 1
            page = {
                "request_id": request_id,
                "tasks": tasks,
                "total": reply.total,
                "page_no": page_no,
                "page_size": page_size,
            }
            return json_response(200, page, reply.headers)
        job = reply.job
        assert job is not None
        if kind == "content":
            return video_response(reply)
        if kind == "cancel":
            return json_response(200, {"request_id": request_id}, reply.headers)
        if kind == "submit":
            output = {"task_id": job.id, "task_status": _STATUS[job.status]}
            return json_response(200, {"request_id": request_id, "output": output}, reply.headers)
        payload: dict[str, Any] = {"request_id": request_id, "output": self.output(job, http)}
        usage = self.usage(job)
        if usage is not None:
            payload["usage"] = usage
        return json_response(200, payload, reply.headers)

    def render_refusal(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        error = reply.error
        assert error is not None
        request_id = self._request_id(reply)
        if reply.request.kind == "status" and error.code == "job_not_found":
            # the gateway answers an id it does not know with 200 UNKNOWN, not a 404
            output = {"task_id": reply.request.job_id, "task_status": "UNKNOWN"}
            return json_response(200, {"request_id": request_id, "output": output}, reply.headers)
        if error.code in ("job_not_cancellable", "job_already_terminal"):
            payload = {
                "request_id": request_id,
                "code": "UnsupportedOperation",
                "message": _NOT_PENDING,
            }
            return json_response(400, payload, reply.headers)
        return self.render_error(reply.status_code, error, reply.headers)

    def output(self, job: JobView, http: HttpRequest) -> dict[str, Any]:
        status = _STATUS[job.status]
        out: dict[str, Any] = {
            "task_id": job.id,
            "task_status": status,
            "submit_time": self._time(job.created_at),
        }
        if status == "RUNNING":
            out["scheduled_time"] = self._time(job.status_since)
        if job.done:
            out["end_time"] = self._time(job.status_since)
        if status == "SUCCEEDED":
            prompt = job.request.get("prompt")
            if isinstance(prompt, str):
                out["orig_prompt"] = prompt
            out["video_url"] = _common.file_url(http, job)
        if status == "FAILED" and job.error is not None:
            out.update(code=job.error.code, message=job.error.message)
        return out

    @staticmethod
    def usage(job: JobView) -> dict[str, Any] | None:
        if _STATUS[job.status] != "SUCCEEDED":
            return None
        parameters = job.request.get("parameters")
        parameters = parameters if isinstance(parameters, dict) else {}
        duration = parameters.get("duration")
        size = parameters.get("size")
        return {
            "video_duration": duration if isinstance(duration, int) else 5,
            "video_ratio": size if isinstance(size, str) else "1280*720",
            "video_count": 1,
        }

    def _time(self, reading: float) -> str:
        """DashScope's ``2025-01-08 16:43:16.396`` (the fake writes UTC)."""
        iso = _common.iso_time(self.epoch, reading)  # 2025-01-08T16:43:16.396Z
        return f"{iso[:10]} {iso[11:-1]}"

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        code = _CODES.get(status, "InternalError" if status >= 500 else "InvalidParameter")
        payload = {
            "request_id": _common.uuid_id(0, 0, error.message),
            "code": code,
            "message": error.message,
        }
        return json_response(status, payload, tuple(headers))
