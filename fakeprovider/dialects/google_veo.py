"""The ``google-veo`` dialect: Vertex AI Veo operations as ``google-genai`` 3.x speaks them.

Point the SDK at ``genai.Client(vertexai=True, api_key=..., http_options=HttpOptions(
base_url=f"{fake}/"))``. Create is ``POST /v1beta1/{model}:predictLongRunning`` and answers an
AIP-151 operation ``{"name": ".../operations/{id}"}``; a status read is
``POST /v1beta1/{model}:fetchPredictOperation`` with ``{"operationName"}`` in the body (journal
kind ``status``, job id from the name). Both path shapes work: with and without the
``projects/{p}/locations/{l}/`` prefix. Every success is HTTP 200 (the SDK accepts nothing else).

A finished operation carries the video inline as ``bytesBase64Encoded``, or as a ``gcsUri`` under
``parameters.storageUri`` when the create named one; there is no separate download.

Vertex has no webhooks for these operations (``google-genai`` refuses ``webhook_config`` in
Vertex mode; only the Gemini Developer API has it): a scenario's ``webhooks:`` block sends the
generic shape.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

from ..http import HttpRequest, HttpResponse, json_response
from ..messages import ApiError, JobView, Reply, Request, video_bytes
from ..webhooks import Outgoing, WebhookMessage
from . import _common
from .base import (
    BadRequest,
    Dialect,
    Route,
    read_json_object,
    route_request,
    submit_request,
)
from .generic import generic_webhook_message

_MODEL = r"(?:projects/[^/]+/locations/[^/]+/)?publishers/[^/]+/models/[^/:]+"
_CREATE = re.compile(rf"^/v1beta1/(?P<resource>{_MODEL}):predictLongRunning$")
_FETCH = re.compile(rf"^/v1beta1/(?P<resource>{_MODEL}):fetchPredictOperation$")
_CANCEL = re.compile(rf"^/v1beta1/(?P<resource>{_MODEL})/operations/(?P<job_id>[^/:]+):cancel$")

_CREATE_ROUTE = Route("POST", "/v1beta1/{model}:predictLongRunning", "submit")
_FETCH_ROUTE = Route("POST", "/v1beta1/{model}:fetchPredictOperation", "status")
_CANCEL_ROUTE = Route("POST", "/v1beta1/{model}/operations/{job_id}:cancel", "cancel")

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    409: "FAILED_PRECONDITION",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    422: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
#: google.rpc.Code numbers for an operation's ``error.code``.
_RPC_CANCELLED = 1
_RPC_INTERNAL = 13


class GoogleVeoDialect(Dialect):
    name = "google-veo"
    headers_read = Dialect.headers_read | {"x-goog-api-key"}
    keeps_status_answers = True  # its status answers show no passing time
    late_cancel_succeeds = True
    poll_hints = False
    routes = (_CREATE_ROUTE, _FETCH_ROUTE, _CANCEL_ROUTE)

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        # Vertex has no webhooks for these operations: a scenario's ``webhooks:`` block sends the generic shape
        return generic_webhook_message(send)

    def new_job_id(self, seed: int, number: int) -> str:
        return _common.uuid_id(seed, number, self.name)

    def credential(self, http: HttpRequest) -> str | None:
        return http.headers.get("x-goog-api-key") or http.bearer

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        if method != "POST":
            return None
        for pattern, route in (
            (_CREATE, _CREATE_ROUTE),
            (_FETCH, _FETCH_ROUTE),
            (_CANCEL, _CANCEL_ROUTE),
        ):
            found = pattern.match(path)
            if found is not None:
                return route, found.groupdict()
        return None

    def allowed_methods(self, path: str) -> list[str]:
        return ["POST"] if any(p.match(path) for p in (_CREATE, _FETCH, _CANCEL)) else []

    def inline_result(self, request: Request, job: JobView) -> bool:
        # a finished operation carries the video inline, unless it was written to storageUri
        return request.kind in ("submit", "status") and self._storage(job) is None

    @staticmethod
    def _storage(job: JobView) -> str | None:
        parameters = job.request.get("parameters")
        storage = parameters.get("storageUri") if isinstance(parameters, dict) else None
        return storage if isinstance(storage, str) and storage else None

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        if route.kind == "cancel":
            return route_request("cancel", params["job_id"], common)
        body = read_json_object(http)
        if route.kind == "status":
            name = body.get("operationName")
            if not isinstance(name, str) or "/operations/" not in name:
                message = (
                    "'operationName' is required: the name of the operation that "
                    "predictLongRunning returned."
                )
                raise BadRequest(400, "invalid_argument", message)
            resource, _, job_id = name.rpartition("/operations/")
            if not resource.endswith(params["resource"]) and not params["resource"].endswith(
                resource
            ):
                message = f"Operation {name!r} does not belong to {params['resource']!r}."
                raise BadRequest(400, "invalid_argument", message, job_id=job_id)
            return route_request("status", job_id, common)
        instances = body.get("instances")
        first = instances[0] if isinstance(instances, list) and instances else None
        if not isinstance(first, dict):
            message = "'instances' is required: a list with one object holding 'prompt' or 'image'."
            raise BadRequest(400, "invalid_argument", message, body=body)
        prompt = first.get("prompt")
        if not (isinstance(prompt, str) and prompt.strip()) and "image" not in first:
            message = "instances[0] needs a non-empty 'prompt' or an 'image'."
            raise BadRequest(400, "invalid_argument", message, body=body)
        parameters = body.get("parameters", {})
        if not isinstance(parameters, dict):
            message = "'parameters' must be an object."
            raise BadRequest(400, "invalid_argument", message, body=body)
        neutral = dict(body)
        neutral.setdefault("model", params["resource"])
        if isinstance(prompt, str):
            neutral.setdefault("prompt", prompt)
        return submit_request(common, neutral)

    # -- rendering ------------------------------------------------------------------------

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        job = reply.job
        kind = reply.request.kind
        assert job is not None
        if kind == "cancel":
            return json_response(200, {}, reply.headers)
        return json_response(200, self.operation(job), reply.headers)

    def operation(self, job: JobView) -> dict[str, Any]:
        resource = str(job.request.get("model"))
        out: dict[str, Any] = {"name": f"{resource}/operations/{job.id}", "done": job.done}
        if not job.done:
            return out
        if job.error is not None:
            out["error"] = self._rpc_error(_RPC_INTERNAL, job.error.message, job.error.code)
        elif job.status == "cancelled":
            out["error"] = self._rpc_error(_RPC_CANCELLED, job.message, "cancelled")
        else:
            out["response"] = self._response(job, resource)
        return out

    @staticmethod
    def _rpc_error(code: int, message: str, reason: str) -> dict[str, Any]:
        info = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": "fakeprovider",
        }
        return {"code": code, "message": message, "details": [info]}

    def _response(self, job: JobView, resource: str) -> dict[str, Any]:
        assert job.result is not None
        storage = self._storage(job)
        video: dict[str, str]
        if storage is not None:
            video = {
                "gcsUri": f"{storage.rstrip('/')}/{job.id}/sample_0.mp4",
                "mimeType": "video/mp4",
            }
        else:
            data = video_bytes(job.id, job.result.size_bytes)
            video = {"bytesBase64Encoded": base64.b64encode(data).decode(), "mimeType": "video/mp4"}
        out: dict[str, Any] = {
            "@type": "type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse",
            "videos": [video],
        }
        if job.summary is not None:
            out["raiMediaFilteredCount"] = 1
            out["raiMediaFilteredReasons"] = [str(dict(job.summary))]
        return out

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        name = _STATUS_NAMES.get(status, "UNKNOWN" if status >= 500 else "FAILED_PRECONDITION")
        payload = {"error": {"code": status, "message": error.message, "status": name}}
        return json_response(status, payload, tuple(headers))
