"""The ``generic`` dialect: the wire API of the README's "generic wire API" section."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..http import HttpRequest, HttpResponse, json_response
from ..messages import JobView, Reply, Request
from ..webhooks import Outgoing, WebhookMessage, iso_timestamp, signed_message
from .base import (
    BadRequest,
    Dialect,
    Route,
    new_request,
    read_json_object,
    route_request,
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


class GenericDialect(Dialect):
    name = "generic"
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
        return new_request(kind="submit", body=body, callback_url=callback, **common)

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
            payload = {
                "job_id": job.id,
                "status": job.status,
                "done": job.done,
                "message": (
                    f"The job has STARTED and is NOT complete. Do not report success. Check "
                    f"status_url after at least {_seconds(job.poll_after) or 0} seconds."
                    if not job.done
                    else job.message
                ),
                "poll_after_seconds": _seconds(job.poll_after),
                "estimated_duration_seconds": _seconds(job.estimated_duration),
                "status_url": f"/v1/jobs/{job.id}",
            }
            headers = (*reply.headers, ("Location", f"/v1/jobs/{job.id}"))
            return json_response(reply.status_code, payload, headers)
        return json_response(200, self.job(job), reply.headers)

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
