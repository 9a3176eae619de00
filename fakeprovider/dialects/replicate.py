"""The ``replicate`` dialect: Replicate's predictions API as ``replicate`` 1.0.7 speaks it.

Point the SDK at ``replicate.Client(api_token=..., base_url=fake)`` (paths carry ``/v1``).
Creates validate ``input`` (an object), ``version`` on ``/v1/predictions``, ``webhook`` and
``webhook_events_filter``, and the ``Prefer: wait[=N]`` header (N in 1..60).

``Prefer: wait[=N]`` holds a create's answer until the job ends or N seconds (60 for a bare
``wait``; scaled by ``--time-scale`` like the scenario) have passed, as Replicate does; a job
still running then is shown ``starting``, which is what tells ``replicate.run`` to poll. Outputs are URLs on the fake's ``/files/{id}.mp4`` route, the stand-in
for replicate.delivery.

Webhooks POST the prediction exactly as ``GET /v1/predictions/{id}`` shows it, signed per
Standard Webhooks (what ``replicate.webhooks.validate`` checks), for the events the create's
``webhook_events_filter`` asks for: ``start`` (the queued change), ``logs`` (processing),
``completed`` (any end); ``output`` (a success, when ``completed`` is not asked for). Without a
filter Replicate sends ``output`` and ``completed``: for a video, just the end.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from http import HTTPStatus
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
    "queued": "starting",
    "processing": "processing",
    "succeeded": "succeeded",
    "completed_with_errors": "succeeded",
    "failed": "failed",
    "cancelled": "canceled",
}
_EVENTS = ("start", "output", "logs", "completed")
#: What Replicate sends when the create has no ``webhook_events_filter``.
_DEFAULT_EVENTS = ("output", "completed")
#: Engine event -> Replicate webhook event (every other event is an end: ``completed``).
_WEBHOOK_EVENTS = {"job.queued": "start", "job.processing": "logs"}
_PREFER = re.compile(r"^\s*wait(?:\s*=\s*(\d+))?\s*$")
_DEFAULT_WAIT = 60  # seconds a bare ``Prefer: wait`` holds, as on Replicate


_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
#: Two base32 digits (RFC 4648's alphabet, lower case) for each 10-bit number.
_BASE32_PAIRS = [a + b for a in _BASE32 for b in _BASE32]


def _base32_id(raw: bytes) -> str:
    """``base64.b32encode(raw).decode().lower().rstrip("=")[:26]``, the same text, for the 16
    bytes of a prediction id: three 5-byte groups of four digit pairs, and the last byte's
    8 bits with two zero bits after them (what ``b32encode``'s loop written in Python does,
    without the loop, the padding and the three string copies)."""
    if len(raw) != 16:
        return base64.b32encode(raw).decode().lower().rstrip("=")[:26]
    pairs, number = _BASE32_PAIRS, int.from_bytes
    a, b, c = number(raw[0:5], "big"), number(raw[5:10], "big"), number(raw[10:15], "big")
    return "".join(
        (
            pairs[a >> 30],
            pairs[(a >> 20) & 1023],
            pairs[(a >> 10) & 1023],
            pairs[a & 1023],
            pairs[b >> 30],
            pairs[(b >> 20) & 1023],
            pairs[(b >> 10) & 1023],
            pairs[b & 1023],
            pairs[c >> 30],
            pairs[(c >> 20) & 1023],
            pairs[(c >> 10) & 1023],
            pairs[c & 1023],
            pairs[raw[15] << 2],
        )
    )


class ReplicateDialect(Dialect):
    name = "replicate"
    headers_read = Dialect.headers_read | {"prefer"}
    keeps_status_answers = True  # its status answers show no passing time
    late_cancel_succeeds = True
    poll_hints = False
    routes = (
        Route("POST", "/v1/models/{owner}/{model}/predictions", "submit"),
        Route("POST", "/v1/deployments/{owner}/{model}/predictions", "submit"),
        Route("POST", "/v1/predictions", "submit"),
        Route("GET", "/v1/predictions", "list"),
        Route("GET", "/v1/predictions/{job_id}", "status"),
        Route("POST", "/v1/predictions/{job_id}/cancel", "cancel"),
        _common.FILE_ROUTE,
    )

    def new_job_id(self, seed: int, number: int) -> str:
        return _base32_id(_common.digest(seed, number, self.name)[:16])

    def credential(self, http: HttpRequest) -> str | None:
        return http.token("bearer", "token")

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        if route.kind != "submit":
            return route_request(route.kind, params.get("job_id"), common)
        body = read_json_object(http)
        hold = 0.0
        prefer = http.headers.get("prefer")
        if prefer is not None:
            found = _PREFER.match(prefer)
            if found is None or (found.group(1) is not None and not 1 <= int(found.group(1)) <= 60):
                message = (
                    f"Invalid Prefer header {prefer!r}; "
                    "send 'wait' or 'wait=N' with N from 1 to 60."
                )
                raise BadRequest(400, "invalid_prefer", message, body=body)
            hold = self.settings.scale(float(found.group(1) or _DEFAULT_WAIT))
        why = self._invalid(route.template, body)
        if why is not None:
            raise BadRequest(422, "invalid_fields", why, body=body)
        neutral = dict(body)
        if "owner" in params:
            neutral.setdefault("model", f"{params['owner']}/{params['model']}")
        prompt = body["input"].get("prompt")
        if isinstance(prompt, str):
            neutral.setdefault("prompt", prompt)
        callback = body.get("webhook")
        return submit_request(common, neutral, callback, hold)

    @staticmethod
    def _invalid(template: str, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("input"), dict):
            return "input: 'input' is required and must be an object."
        if template == "/v1/predictions" and (
            not isinstance(body.get("version"), str) or not body["version"]
        ):
            return "version: 'version' is required and must be a string."
        if "webhook" in body and not (
            isinstance(body["webhook"], str) and body["webhook"].startswith(("http://", "https://"))
        ):
            return "webhook: 'webhook' must be an http(s) URL."
        events = body.get("webhook_events_filter")
        if events is not None and (
            not isinstance(events, list) or any(e not in _EVENTS for e in events)
        ):
            return f"webhook_events_filter: each event must be one of {', '.join(_EVENTS)}."
        return None

    # -- rendering ------------------------------------------------------------------------

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        kind = reply.request.kind
        job = reply.job
        if kind == "list":
            results = [self.prediction(j, http) for j in reversed(reply.jobs)]
            payload = {"previous": None, "next": None, "results": results}
            return json_response(200, payload, reply.headers)
        assert job is not None
        if kind == "content":
            return video_response(reply)
        prediction = self.prediction(job, http)
        if kind == "submit":
            if not job.done:
                prediction["status"] = "starting"
            return json_response(201, prediction, reply.headers)
        return json_response(200, prediction, reply.headers)

    def prediction(self, job: JobView, http: HttpRequest) -> dict[str, Any]:
        request = job.request
        status = _STATUS[job.status]
        created = _common.iso_time(self.epoch, job.created_at)
        started = None if job.status == "queued" else created
        completed = job.completed_at
        out: dict[str, Any] = {
            "id": job.id,
            "model": str(request.get("model") or "unknown/unknown"),
            "version": str(request.get("version") or "hidden"),
            "input": request.get("input", {}),
            "logs": "" if job.status == "queued" else job.message,
            "output": _common.file_url(http, job) if job.result is not None else None,
            "data_removed": False,
            "error": job.error.message if job.error is not None else None,
            "status": status,
            "created_at": created,
            "started_at": started,
            "completed_at": None if completed is None else _common.iso_time(self.epoch, completed),
            "urls": {
                "get": f"{http.base_url}/v1/predictions/{job.id}",
                "cancel": f"{http.base_url}/v1/predictions/{job.id}/cancel",
            },
        }
        if completed is not None:
            out["metrics"] = {"predict_time": round(completed - job.created_at, 3)}
        return out

    # -- webhooks -------------------------------------------------------------------------

    def webhook_event(self, event: str, job: JobView) -> str | None:
        asked = job.request.get("webhook_events_filter") or _DEFAULT_EVENTS
        name = _WEBHOOK_EVENTS.get(event, "completed")
        if name in asked:
            return name
        if name == "completed" and job.result is not None and "output" in asked:
            return "output"
        return None

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        job = send.delivery.job
        return signed_message(self.prediction(job, self.webhook_request(send.base_url)), send)

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        try:
            title = HTTPStatus(status).phrase
        except ValueError:
            title = error.code
        payload = {"title": title, "detail": error.message, "status": status}
        out = json_response(status, payload, tuple(headers))
        return HttpResponse(out.status, out.body, "application/problem+json", out.headers)
