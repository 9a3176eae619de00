"""The ``fal`` dialect: fal's queue API as ``fal-client`` 1.0.3 speaks it.

fal-client has no base-URL option: set ``fal_client.client.QUEUE_URL_FORMAT = f"{fake}/"``
(trailing slash) before submitting. Submit answers the request's ``status_url``,
``response_url`` and ``cancel_url`` as absolute URLs on the fake, which the SDK then follows.

``GET response_url`` is the result retrieval (journal kind ``content``): the result JSON once the
job succeeded, a 4xx ``{"detail", "error_type"}`` when it failed or was cancelled (fal-client
ignores ``error`` in a COMPLETED status, so failure must surface there). Every response carries
``x-fal-request-id`` except scripted faults with a body of their own, which stand for errors
from fal's ingress (nginx) in front of the app.

Webhooks (``?fal_webhook=``) are sent once a request ends, as fal shapes them:
``{"request_id", "gateway_request_id", "status": "OK", "payload": {...result...}, "error": null}``
or ``"status": "ERROR"`` with ``error`` and ``payload: {"detail", "error_type"}``, signed the fal
way: ED25519 over ``{request_id}\n{user_id}\n{timestamp}\n{sha256 hex of the body}``, the
signature hex in ``X-Fal-Webhook-Signature`` beside ``X-Fal-Webhook-Request-Id``, ``-User-Id``
and ``-Timestamp`` (Unix seconds). The fake signs with its own fixed test key, whose public half
it serves as a JWKS at ``GET /.well-known/jwks.json`` (fal publishes its keys at
``https://rest.alpha.fal.ai/.well-known/jwks.json``). A forged copy is signed with another key,
a stale one carries a timestamp 10 minutes old (fal's receivers allow 5).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from .. import _ed25519
from ..http import HttpRequest, HttpResponse, _response, json_response
from ..messages import ApiError, JobView, Reply, Request, RequestKind
from ..webhooks import STALE_AGE, Outgoing, WebhookMessage, json_body
from . import _common
from .base import (
    Dialect,
    Route,
    cancel_after_end,
    new_request,
    read_json_object,
    route_request,
    submit_request,
    video_response,
)

_REQUEST = re.compile(
    r"^/(?P<app>[^/]+/[^/]+(?:/.+?)?)/requests/(?P<job_id>[^/]+)(?P<tail>/status|/cancel)?$"
)
_SUBMIT = re.compile(r"^/(?P<app>[^/]+/[^/]+(?:/[^/]+)*)$")
_FILE = re.compile(r"^/files/(?P<job_id>[^/]+)\.mp4$")

_ROUTES = {
    ("GET", "/status"): Route("GET", "/{app}/requests/{job_id}/status", "status"),
    ("PUT", "/cancel"): Route("PUT", "/{app}/requests/{job_id}/cancel", "cancel"),
    ("GET", ""): Route("GET", "/{app}/requests/{job_id}", "content"),
}
_SUBMIT_ROUTE = Route("POST", "/{app}", "submit")
#: The fake's JWKS: no job request (journaled ``unknown``, judged by no invariant).
_JWKS_ROUTE = Route("GET", "/.well-known/jwks.json", "unknown")
JWKS_PATH = _JWKS_ROUTE.template

#: The fake's webhook signing key (a published test key: anyone can sign with it), its key
#: id, and the user id its webhooks name; a forged copy is signed with ``_FORGED_SEED``.
SIGNING_SEED = hashlib.sha256(b"fakeprovider fal webhook signing key").digest()
KEY_ID = "fakeprovider-fal-1"
USER_ID = "fakeprovider"
_FORGED_SEED = hashlib.sha256(b"fakeprovider forged fal webhook key").digest()


def _with_logs(http: HttpRequest) -> bool:
    """Whether a status read asks for the logs (``?logs=1``)."""
    return http.query.get("logs", "").lower() in ("true", "1")


class FalDialect(Dialect):
    name = "fal"
    headers_read = Dialect.headers_read
    keeps_status_answers = True  # but for what status_input says
    poll_hints = False
    routes = (*_ROUTES.values(), _SUBMIT_ROUTE, _common.FILE_ROUTE, _JWKS_ROUTE)

    def new_job_id(self, seed: int, number: int) -> str:
        return _common.uuid_id(seed, number, self.name)

    def credential(self, http: HttpRequest) -> str | None:
        return http.token("key", "bearer")

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        if path == JWKS_PATH:
            return (_JWKS_ROUTE, {}) if method == "GET" else None
        found = _FILE.match(path)
        if found is not None:
            return (_common.FILE_ROUTE, found.groupdict()) if method == "GET" else None
        found = _REQUEST.match(path)
        if found is not None:
            route = _ROUTES.get((method, found.group("tail") or ""))
            if route is None:
                return None
            return route, {"app": found.group("app"), "job_id": found.group("job_id")}
        found = _SUBMIT.match(path)
        if found is not None and method == "POST":
            return _SUBMIT_ROUTE, {"app": found.group("app")}
        return None

    def allowed_methods(self, path: str) -> list[str]:
        if _FILE.match(path) or path == JWKS_PATH:
            return ["GET"]
        found = _REQUEST.match(path)
        if found is not None:
            tail = found.group("tail") or ""
            return sorted(m for (m, t) in _ROUTES if t == tail)
        return ["POST"] if _SUBMIT.match(path) else []

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        if route is _JWKS_ROUTE:
            # answered by the dialect, not the engine: an ``unknown`` request whose "problem"
            # is a 200, so that it passes no auth, rate limit or job logic (faults still apply)
            return new_request(
                kind="unknown",
                problem="The fake's webhook public keys.",
                problem_status=200,
                problem_code="public_keys",
                **common,
            )
        if route.kind != "submit":
            return route_request(route.kind, params.get("job_id"), common)
        body = read_json_object(http)
        neutral = dict(body)
        neutral.setdefault("model", params["app"])
        return submit_request(common, neutral, http.query.get("fal_webhook"))

    # -- rendering ------------------------------------------------------------------------

    def render(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        job = reply.job
        request_id = job.id if job is not None else (reply.request.job_id or f"req-{reply.seq}")
        response = super().render(reply, http)
        if reply.scripted and reply.fault is not None and reply.fault.body is not None:
            return response  # an ingress error: nginx does not add the app's request id
        return _response(
            response.status,
            response.body,
            response.media_type,
            (*response.headers, ("x-fal-request-id", request_id)),
        )

    def renderer(self, kind: RequestKind) -> Callable[[Reply, HttpRequest], HttpResponse]:
        cls = type(self)
        if (
            kind == "submit"
            and cls.render is FalDialect.render
            and cls.render_answer is FalDialect.render_answer
        ):
            return self._submit
        return super().renderer(kind)

    def _submit(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        """``render(reply, http)`` for a submit's reply that neither a fault nor a refusal
        touches: ``render_answer``'s answer with the request id after the reply's headers, made
        once rather than made and then copied with the header."""
        job = reply.job
        assert job is not None
        payload = {"request_id": job.id, **self._urls(job, http), "queue_position": 0}
        return json_response(200, payload, (*reply.headers, ("x-fal-request-id", job.id)))

    def render_refusal(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        assert reply.error is not None
        if reply.error.code == "public_keys" and reply.status_code == 200:
            return json_response(200, jwks(), reply.headers)
        if reply.request.kind == "content" and reply.job is not None:
            return self._no_result(reply.job, reply)
        if cancel_after_end(reply):
            return json_response(400, {"status": "ALREADY_COMPLETED"}, reply.headers)
        return self.render_error(reply.status_code, reply.error, reply.headers)

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        kind: RequestKind = reply.request.kind
        job = reply.job
        assert job is not None
        urls = self._urls(job, http)
        if kind == "submit":
            payload = {"request_id": job.id, **urls, "queue_position": 0}
            return json_response(200, payload, reply.headers)
        if kind == "cancel":
            return json_response(202, {"status": "CANCELLATION_REQUESTED"}, reply.headers)
        if kind == "content":
            assert reply.content is not None
            if _FILE.match(reply.request.path):
                return video_response(reply)
            return json_response(200, self.result(job, http), reply.headers)
        return json_response(
            200 if job.done else 202, self.status(job, urls, _with_logs(http)), reply.headers
        )

    def status_input(self, reply: Reply, http: HttpRequest) -> object:
        # whether logs are asked for (True or False); and a job that ended at reading 0
        # shows the time it has taken as of now (``status``): answered afresh every time
        job = reply.job
        if job is not None and job.done and not job.completed_at:
            return (job.now,)  # a new object: never the same, the answer is made afresh
        return _with_logs(http)

    def _urls(self, job: JobView, http: HttpRequest) -> dict[str, str]:
        model = str(job.request.get("model") or "fal-ai/unknown")
        app = "/".join(model.split("/")[:2])
        base = f"{http.base_url}/{app}/requests/{job.id}"
        return {
            "response_url": base,
            "status_url": f"{base}/status",
            "cancel_url": f"{base}/cancel",
        }

    def status(self, job: JobView, urls: dict[str, str], with_logs: bool) -> dict[str, Any]:
        logs = None
        if with_logs:
            logs = [
                {
                    "message": job.message,
                    "level": "INFO",
                    "source": "user",
                    "timestamp": _common.iso_time(self.epoch, job.status_since),
                }
            ]
        out: dict[str, Any] = {"request_id": job.id, **urls}
        if job.status == "queued":
            out.update(status="IN_QUEUE", queue_position=0)
            return out
        out.update(status="IN_PROGRESS" if not job.done else "COMPLETED", logs=logs)
        if job.done:
            completed = job.completed_at or job.now
            out["metrics"] = {"inference_time": round(completed - job.created_at, 3)}
            if job.error is not None:
                out.update(error=job.error.message, error_type=job.error.code)
            elif job.status == "cancelled":
                out.update(error=job.message, error_type="request_cancelled")
        return out

    def result(self, job: JobView, http: HttpRequest) -> dict[str, Any]:
        assert job.result is not None
        return {
            "video": {
                "url": _common.file_url(http, job),
                "content_type": "video/mp4",
                "file_name": f"{job.id}.mp4",
                "file_size": job.result.size_bytes,
            }
        }

    def _no_result(self, job: JobView, reply: Reply) -> HttpResponse:
        if job.error is not None:
            payload = {"detail": job.error.message, "error_type": job.error.code}
            headers = (*reply.headers, ("x-fal-error-type", job.error.code))
            return json_response(422, payload, headers)
        if job.status == "cancelled":
            payload = {"detail": "Request was cancelled.", "error_type": "request_cancelled"}
            return json_response(400, payload, reply.headers)
        return json_response(400, {"detail": "Request is still in progress"}, reply.headers)

    # -- webhooks -------------------------------------------------------------------------

    def webhook_event(self, event: str, job: JobView) -> str | None:
        """fal sends one webhook, when the request ends (OK or ERROR)."""
        return ("ERROR" if job.result is None else "OK") if job.done else None

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        job = send.delivery.job
        payload: dict[str, Any] = {"request_id": job.id, "gateway_request_id": job.id}
        if job.result is not None:
            http = self.webhook_request(send.base_url)
            payload.update(status="OK", payload=self.result(job, http), error=None)
        else:
            detail, code = (
                (job.error.message, job.error.code)
                if job.error is not None
                else ("Request was cancelled.", "request_cancelled")
            )
            payload.update(
                status="ERROR", payload={"detail": detail, "error_type": code}, error=detail
            )
        return signed_message(payload, send)

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        return json_response(
            status, {"detail": error.message, "error_type": error.code}, tuple(headers)
        )


def jwks() -> dict[str, Any]:
    """The JWKS of the fake's webhook signing key (RFC 8037 ``OKP`` / ``Ed25519``)."""
    public = _ed25519.public_key(SIGNING_SEED)
    x = base64.urlsafe_b64encode(public).rstrip(b"=").decode("ascii")
    key = {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": KEY_ID, "alg": "EdDSA", "use": "sig"}
    return {"keys": [key]}


def signed_message(payload: dict[str, Any], send: Outgoing) -> WebhookMessage:
    """``payload`` signed the fal way (forged sends with another key, stale ones 10 min old)."""
    body = json_body(payload)
    delivery = send.delivery
    timestamp = math.floor(send.sent_at)
    if delivery.variant == "stale":
        timestamp -= int(STALE_AGE)
    seed = _FORGED_SEED if delivery.variant == "forged" else SIGNING_SEED
    digest = hashlib.sha256(body).hexdigest()
    signed = f"{delivery.job_id}\n{USER_ID}\n{timestamp}\n{digest}".encode()
    headers = {
        "x-fal-webhook-request-id": delivery.job_id,
        "x-fal-webhook-user-id": USER_ID,
        "x-fal-webhook-timestamp": str(timestamp),
        "x-fal-webhook-signature": _ed25519.sign(seed, signed).hex(),
        "content-type": "application/json",
    }
    return WebhookMessage(body, headers)
