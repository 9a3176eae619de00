"""The ``ark`` dialect: Seedance video tasks on Volcengine Ark, as ``volcenginesdkarkruntime``
speaks them.

Point the SDK at ``Ark(base_url=f"{fake}/api/v3", api_key=...)``. The wire, read from
``volcenginesdkarkruntime/resources/content_generation/tasks.py`` (volcengine-ark-runtime
5.0.54; the BytePlus twin ``byteplussdkarkruntime`` speaks the same one):

- ``POST /api/v3/contents/generations/tasks`` ``{model, content: [{type: text|image_url|...}],
  callback_url?, ratio?, duration?, resolution?, seed?, ...}`` answers ``{"id"}``;
- ``GET /api/v3/contents/generations/tasks/{id}``: the task, ``status`` one of ``queued``,
  ``running``, ``succeeded``, ``failed``, ``cancelled`` (and ``expired``), the video at
  ``content.video_url``;
- ``GET /api/v3/contents/generations/tasks`` with ``page_num``, ``page_size``,
  ``filter.status``, ``filter.model``, ``filter.task_ids``: ``{"total", "items"}``;
- ``DELETE /api/v3/contents/generations/tasks/{id}``: cancels a queued task, deletes the record
  of a finished one (the fake keeps it readable); answers ``{}``. A running task cannot be
  cancelled (400).

Errors are ``{"error": {"code", "message", "param", "type"}}``. Ark sends no poll hint.
``callback_url`` receives the task object, as ``GET`` shows it, on every change of status,
unsigned (Ark documents no signature): a scenario's ``forged:`` and ``stale:`` send nothing here.
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
    new_request,
    read_json_object,
    route_request,
    submit_request,
    video_response,
)

PREFIX = "/api/v3/contents/generations/tasks"

_STATUS = {
    "queued": "queued",
    "processing": "running",
    "succeeded": "succeeded",
    "completed_with_errors": "succeeded",
    "failed": "failed",
    "cancelled": "cancelled",
}
#: The engine statuses each of Ark's shows (``failed`` and ``expired`` are both ``failed``).
_ENGINE_STATUSES = {
    shown: frozenset(status for status, mine in _STATUS.items() if mine == shown)
    for shown in set(_STATUS.values())
} | {"expired": frozenset({"failed"})}
#: ``content`` item types Ark accepts.
_CONTENT_TYPES = ("text", "image_url", "video_url", "audio_url", "draft_task")
#: Ark's error code and type for each HTTP status the fake answers.
_ERRORS = {
    400: ("InvalidParameter", "BadRequest"),
    401: ("AuthenticationError", "Unauthorized"),
    403: ("AccessDenied", "Forbidden"),
    404: ("ResourceNotFound", "NotFound"),
    405: ("InvalidParameter", "BadRequest"),
    409: ("InvalidParameter", "BadRequest"),
    413: ("InvalidParameter", "BadRequest"),
    415: ("InvalidParameter", "BadRequest"),
    422: ("InvalidParameter", "BadRequest"),
    429: ("RateLimitExceeded", "TooManyRequests"),
}
_CANCELLABLE = frozenset({"queued"})
#: Seedance's defaults for a text-to-video task.
_DEFAULTS = {"resolution": "720p", "ratio": "16:9", "duration": 5}
_FPS = 24
#: Ark keeps a task's execution window 48 h unless the create says otherwise.
_EXPIRES_AFTER = 172800


#: The optional parameters ``_invalid`` wants integers of, and those it wants strings of.
_INTEGERS = frozenset({"duration", "seed", "frames", "execution_expires_after"})
_STRINGS = frozenset({"ratio", "resolution"})


def _bad(name: str, why: str) -> str:
    """Ark's message for a bad parameter."""
    return f"The parameter `{name}` specified in the request is not valid: {why}."


class ArkDialect(Dialect):
    name = "ark"
    headers_read = Dialect.headers_read
    keeps_status_answers = True  # its status answers show no passing time
    late_cancel_succeeds = True
    poll_hints = False
    routes = (
        Route("POST", PREFIX, "submit"),
        Route("GET", PREFIX, "list"),
        Route("GET", f"{PREFIX}/{{job_id}}", "status"),
        Route("DELETE", f"{PREFIX}/{{job_id}}", "cancel"),
        _common.FILE_ROUTE,
    )

    def new_job_id(self, seed: int, number: int) -> str:
        return "cgt-" + _common.digest(seed, number, self.name).hex()[:24]

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        if route.kind == "list":
            return self._list(http, common)
        if route.kind == "cancel":
            # Ark cancels a queued task only (and deletes a finished one's record)
            job_id = params["job_id"]
            return new_request(kind="cancel", job_id=job_id, cancel_from=_CANCELLABLE, **common)
        if route.kind != "submit":
            return route_request(route.kind, params.get("job_id"), common)
        body = read_json_object(http)
        problem = self._invalid(body)
        if problem is not None:
            raise BadRequest(400, "invalid_parameter", problem, body=body)
        neutral = dict(body)
        texts = [item["text"] for item in body["content"] if item.get("type") == "text"]
        if texts:
            neutral.setdefault("prompt", " ".join(texts))
        return submit_request(common, neutral, body.get("callback_url"))

    @staticmethod
    def _invalid(body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _bad("model", "it is required")
        content = body.get("content")
        if not isinstance(content, list) or not content:
            return _bad("content", "it must be a non-empty list")
        for index, item in enumerate(content):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind not in _CONTENT_TYPES:
                shown = ", ".join(_CONTENT_TYPES)
                return _bad(f"content[{index}].type", f"use one of {shown}")
            if kind == "text" and not (isinstance(item.get("text"), str) and item["text"].strip()):
                return _bad(f"content[{index}].text", "it must be a non-empty string")
        callback = body.get("callback_url")
        if callback is not None and not (
            isinstance(callback, str) and callback.startswith(("http://", "https://"))
        ):
            return _bad("callback_url", "it must be an http(s) URL")
        if _INTEGERS.isdisjoint(body) and _STRINGS.isdisjoint(body):
            return None  # none of the checks below has a value to refuse (most creates)
        for key in ("duration", "seed", "frames", "execution_expires_after"):
            value = body.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                return _bad(key, "it must be an integer")
        for key in ("ratio", "resolution"):
            value = body.get(key)
            if value is not None and not isinstance(value, str):
                return _bad(key, "it must be a string")
        return None

    def _list(self, http: HttpRequest, common: dict[str, Any]) -> Request:
        query = http.query
        message = "The parameters `page_num` (from 1) and `page_size` (1 to 500) must be integers in range."
        page = _common.page_window(query, "page_num", "page_size", 500, message)
        status = query.get("filter.status")
        model = query.get("filter.model")
        task_id = query.get("filter.task_ids")

        def wanted(job: JobView) -> bool:
            return (
                (status is None or self.status(job) == status)
                and (model is None or job.request.get("model") == model)
                and (task_id is None or job.id == task_id)
            )

        # the engine keeps jobs by status: a status filter alone costs a page, not every job
        statuses = None if status is None else _ENGINE_STATUSES.get(status, frozenset())
        exact = status not in ("failed", "expired")  # both are the engine's "failed"
        return new_request(
            kind="list",
            select=None if exact and model is None and task_id is None else wanted,
            statuses=statuses,
            page=page,
            newest_first=True,
            **common,
        )

    # -- rendering ------------------------------------------------------------------------

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        kind = reply.request.kind
        if kind == "list":
            items = [self.task(job, http) for job in reply.jobs]  # newest first, as Ark lists
            return json_response(200, {"total": reply.total, "items": items}, reply.headers)
        job = reply.job
        assert job is not None
        if kind == "submit":
            return json_response(200, {"id": job.id}, reply.headers)
        if kind == "cancel":
            return json_response(200, {}, reply.headers)
        if kind == "content":
            return video_response(reply)
        return json_response(200, self.task(job, http), reply.headers)

    @staticmethod
    def status(job: JobView) -> str:
        """Ark's status: a failure whose error code is ``expired`` is Ark's ``expired``."""
        if job.status == "failed" and job.error is not None and job.error.code == "expired":
            return "expired"
        return _STATUS[job.status]

    def task(self, job: JobView, http: HttpRequest) -> dict[str, Any]:
        request = job.request
        status = self.status(job)
        out: dict[str, Any] = {
            "id": job.id,
            "model": request.get("model"),
            "status": status,
        }
        if status == "succeeded":
            out["content"] = {"video_url": _common.file_url(http, job)}
        if status in ("failed", "expired") and job.error is not None:
            out["error"] = {"code": job.error.code, "message": job.error.message}

        def given(key: str, default: Any) -> Any:
            # the SDK sends every parameter, null when not set
            value = request.get(key)
            return default if value is None else value

        duration = given("duration", _DEFAULTS["duration"])
        if status == "succeeded":
            tokens = duration * 21780 if isinstance(duration, int) else 108900
            out["usage"] = {"completion_tokens": tokens, "total_tokens": tokens}
        seed = int.from_bytes(_common.digest(0, 0, job.id)[:4]) % 2**31
        out.update(
            created_at=_common.unix_time(self.epoch, job.created_at),
            updated_at=_common.unix_time(self.epoch, job.status_since),
            seed=given("seed", seed),
            resolution=given("resolution", _DEFAULTS["resolution"]),
            ratio=given("ratio", _DEFAULTS["ratio"]),
            duration=duration,
            framespersecond=_FPS,
            service_tier=given("service_tier", "default"),
            execution_expires_after=given("execution_expires_after", _EXPIRES_AFTER),
        )
        return out

    def render_refusal(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        assert reply.error is not None
        if reply.error.code == "job_not_cancellable" and reply.job is not None:
            status = self.status(reply.job)
            message = f"The task {reply.job.id} is {status}; only a queued task can be cancelled."
            error = ApiError(reply.error.code, message)
            return self.render_error(400, error, reply.headers)
        return super().render_refusal(reply, http)

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        code, kind = _ERRORS.get(status, ("InternalServiceError", "InternalServerError"))
        if error.code == "job_not_found":
            code = "ResourceNotFound.Task"
        payload = {"error": {"code": code, "message": error.message, "param": "", "type": kind}}
        return json_response(status, payload, tuple(headers))

    # -- webhooks -------------------------------------------------------------------------

    webhook_signed = False

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        """The task object as ``GET`` shows it at the change, unsigned."""
        http = self.webhook_request(send.base_url)
        return unsigned_message(self.task(send.delivery.job, http))
