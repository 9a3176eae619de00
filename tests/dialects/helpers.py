"""Shared helpers for the dialect tests: serve a scenario, read the journal, ask the checker."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakeprovider.clock import VirtualClock
from fakeprovider.http import HttpRequest
from fakeprovider.inprocess import virtual_provider
from fakeprovider.invariants import Limits, Violation, check
from fakeprovider.journal import Entry
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import Scenario
from fakeprovider.server import ServerThread
from fakeprovider.webhooks import Delivery, Outgoing, WebhookMessage, plan

#: Bundled scenarios run 50 times faster: slow-success takes about 2 s.
SCALE = 0.02


@contextmanager
def serve(
    dialect: str, scenario: Scenario | str, *, time_scale: float = SCALE
) -> Iterator[tuple[FakeProvider, str]]:
    """A real server playing ``scenario`` in ``dialect``; yields the provider and base URL."""
    provider = FakeProvider(scenario, dialect=dialect, time_scale=time_scale)
    with ServerThread(provider) as server:
        yield provider, server.url


@contextmanager
def serve_inprocess(
    dialect: str, scenario: Scenario | str, *, time_scale: float = SCALE
) -> Iterator[tuple[FakeProvider, str]]:
    """``serve`` without sockets: ``scenario`` played in ``dialect`` in-process, in virtual
    time, at the same ``time_scale``; yields the provider and base URL.

    The SDK's httpx, httpx2 or requests client is answered by the fake, and its sleeps and
    clock readings follow the fake's virtual clock: the SDK waits exactly what it would over a
    socket at this scale (its scaled intervals and deadlines unchanged), without the wall time,
    and the journal's times cannot depend on the machine's load. Webhook tests and the key
    cells of ``test_matrix.py`` stay on real sockets (``serve``).
    """
    with virtual_provider(scenario, dialect=dialect, time_scale=time_scale) as fp:
        yield fp.provider, fp.url


def settled(provider: FakeProvider, timeout: float = 5.0) -> list[Entry]:
    """The journal once every answer has been recorded as sent (the SDK may return first)."""
    deadline = time.monotonic() + timeout
    while True:
        entries = provider.entries
        if all(e.completed_at is not None or e.dropped for e in entries):
            return entries
        if time.monotonic() > deadline:
            raise AssertionError(f"unfinished journal entries: {entries!r}")
        time.sleep(0.01)


def unusual(entries: list[Entry]) -> list[tuple[str, int | None, str | None]]:
    """Every entry but the plain successful status reads: (kind, status code, fault)."""
    return [
        (e.kind, e.status_code, e.fault)
        for e in entries
        if e.kind != "status" or (e.status_code or 0) >= 300 or e.fault
    ]


def last_status(entries: list[Entry]) -> str | None:
    shown = [e.job_status for e in entries if e.kind == "status" and e.job_status]
    return shown[-1] if shown else None


def violations(provider: FakeProvider, **overrides: Any) -> list[Violation]:
    """What the checker finds in the journal, under the scenario's expect: limits.

    ``time_scale`` goes to ``from_expect`` too: the scenario's durations are already scaled,
    but its ``status_rate`` budget is per scenario second and must be divided by the scale.
    """
    scale = provider.settings.time_scale
    limits = Limits.from_expect(provider.scenario.expect, time_scale=scale, **overrides)
    return list(check(settled(provider), limits).violations)


def violated(provider: FakeProvider, **overrides: Any) -> set[str]:
    """The names of the invariants the journal breaks, under the scenario's expect: limits."""
    return {v.invariant for v in violations(provider, **overrides)}


def virtual(dialect: str, scenario: str = "slow-success") -> tuple[FakeProvider, VirtualClock]:
    clock = VirtualClock()
    return FakeProvider(scenario, clock=clock, dialect=dialect), clock


def call(
    provider: FakeProvider,
    method: str,
    path: str,
    *,
    json_body: Any = None,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    query: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    """One request through the provider (no sockets): status, headers, JSON body (or bytes)."""
    sent = {k.lower(): v for k, v in (headers or {}).items()}
    if json_body is not None:
        body = json.dumps(json_body).encode()
        sent.setdefault("content-type", "application/json")
    http = HttpRequest(
        method=method,
        path=path,
        query=dict(query or {}),
        headers=sent,
        body=body,
        peer="127.0.0.1:1",
        base_url="http://fake.test",
    )
    reply, response = provider.receive(http)
    if reply.delay > 0 and isinstance(provider.clock, VirtualClock):
        provider.clock.advance(reply.delay)  # what the server does: answer after the delay
    now = provider.clock.now()
    provider.sent(reply, started=now, completed=now, status_code=response.status)
    out_headers = {k.lower(): v for k, v in response.headers}
    if response.media_type and "json" in response.media_type:
        return response.status, out_headers, json.loads(response.body)
    return response.status, out_headers, response.body


#: Sent by every SDK under test and by ``download``: the journal keys clients by
#: ``X-Client-Id`` (else by peer address and port, which changes when an SDK reconnects).
CLIENT_ID = "sdk-under-test"
CLIENT_HEADERS = {"X-Client-Id": CLIENT_ID}


def download(url: str, attempts: int = 3) -> bytes:
    """Fetch a result URL once, as a careful user would: retry 5xx after its Retry-After."""
    import httpx

    with httpx.Client(headers=CLIENT_HEADERS) as client:
        for _ in range(attempts - 1):
            response = client.get(url)
            if response.status_code < 500:
                break
            time.sleep(float(response.headers.get("retry-after", "1")))
        else:
            response = client.get(url)
        response.raise_for_status()
        return response.content


def retried_through_transient_5xx(submit_code: int) -> list[tuple[str, int | None, str | None]]:
    """``unusual(...)`` of an SDK that retries every fault of ``transient-5xx`` and succeeds.

    (It sees the two 503s of status reads 2 and 3; reads 6 and 9 come after success.)
    """
    return [
        ("submit", submit_code, None),
        ("status", 503, "upstream-503"),
        ("status", 503, "upstream-503"),
        ("content", 503, "download-503"),
        ("content", 200, None),
    ]


# -- webhooks --------------------------------------------------------------------------------

#: The scenarios' default webhook secret.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

#: Three jobs matched in submit order: a success, a failure, a cancellable one.
HOOK_JOBS = """
jobs:
  - timeline:
      - status: queued
      - {at: 100ms, status: processing, progress: 50}
      - {at: 300ms, status: succeeded}
  - timeline:
      - status: queued
      - {at: 100ms, status: processing}
      - {at: 300ms, status: failed}
    error: {code: content_policy, message: The prompt was refused.}
  - timeline:
      - status: queued
      - {at: 10s, status: succeeded}
"""


def hook_scenario(url: str | None, block: str) -> str:
    """``HOOK_JOBS`` with a ``webhooks:`` block (``block``: its indented lines) sent to ``url``."""
    target = f"  url: {url}\n" if url else ""
    return f"{HOOK_JOBS}webhooks:\n{target}  secret: {SECRET}\n{block}"


def planned_messages(
    provider: FakeProvider, clock: VirtualClock, seconds: float
) -> list[tuple[Delivery, WebhookMessage]]:
    """Advance ``clock`` by ``seconds``; every send planned so far, as the dialect shapes it
    (base URL ``http://fake.test``, sent when due)."""
    clock.advance(seconds)
    _, changes, _ = provider.advance()
    config = provider.scenario.webhooks
    assert config is not None
    out = []
    for delivery in plan(config, changes, seed=provider.scenario.seed, shape=provider.dialect):
        send = Outgoing(
            delivery, config.secret, clock.epoch + delivery.at, clock.epoch, "http://fake.test"
        )
        out.append((delivery, provider.dialect.webhook_message(send)))
    return out


def body_of(message: WebhookMessage) -> Any:
    return json.loads(message.body)


@dataclass
class Hook:
    """One delivery a ``HookReceiver`` got, and what its judge said (None: accepted)."""

    headers: dict[str, str]
    body: bytes
    verdict: str | None

    @property
    def json(self) -> Any:
        return json.loads(self.body)


#: Judges a delivery (body, headers): None to accept it (204), else why not (400).
Judge = Callable[[bytes, dict[str, str]], "str | None"]


def openai_judge(secret: str) -> Judge:
    """A judge that verifies each delivery with the openai SDK's ``webhooks.unwrap``."""
    import openai

    hooks = openai.OpenAI(api_key="sk-test", webhook_secret=secret).webhooks

    def judge(body: bytes, headers: dict[str, str]) -> str | None:
        try:
            hooks.unwrap(body, headers)
        except openai.InvalidWebhookSignatureError as exc:
            return str(exc)
        return None

    return judge


def replicate_judge(secret: str) -> Judge:
    """A judge that verifies each delivery with the replicate SDK's ``Webhooks.validate``
    (with a 300 s tolerance: without one it does not check the timestamp)."""
    from replicate.webhook import Webhooks, WebhookSigningSecret, WebhookValidationError

    key = WebhookSigningSecret(key=secret)

    def judge(body: bytes, headers: dict[str, str]) -> str | None:
        try:
            Webhooks.validate(headers=headers, body=body.decode(), secret=key, tolerance=300)
        except WebhookValidationError as exc:
            return str(exc)
        return None

    return judge


def standard_webhooks_judge(secret: str, tolerance: float = 300.0) -> Judge:
    """A judge that verifies Standard Webhooks v1 signatures as a receiver would write it from
    the spec (written here, not taken from fakeprovider): HMAC-SHA256 over
    ``{id}.{timestamp}.{body}`` with the base64 key after ``whsec_``, any of the space-separated
    ``v1,`` signatures, and a timestamp within ``tolerance`` seconds of now. For providers whose
    SDK has no verifier (the Gemini API)."""
    import base64
    import hashlib
    import hmac

    key = base64.b64decode(secret.removeprefix("whsec_"))

    def judge(body: bytes, headers: dict[str, str]) -> str | None:
        msg_id, stamp = headers.get("webhook-id"), headers.get("webhook-timestamp")
        signatures = headers.get("webhook-signature", "").split()
        if not msg_id or not stamp or not stamp.isdigit() or not signatures:
            return "missing Standard Webhooks headers"
        if abs(time.time() - int(stamp)) > tolerance:
            return "timestamp outside the tolerance"
        signed = f"{msg_id}.{stamp}.".encode() + body
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        for entry in signatures:
            version, _, value = entry.partition(",")
            if version == "v1" and hmac.compare_digest(value, expected):
                return None
        return "no matching signature"

    return judge


def fal_judge(jwks: Mapping[str, Any], *, now: Callable[[], float] = time.time) -> Judge:
    """A judge that verifies each delivery as fal documents it: ED25519 (with ``cryptography``)
    over ``{request_id}\\n{user_id}\\n{timestamp}\\n{sha256 hex of the body}`` against any key
    of ``jwks``, the timestamp within 300 s of ``now()``."""
    import base64
    import hashlib

    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    keys = [
        Ed25519PublicKey.from_public_bytes(base64.urlsafe_b64decode(key["x"] + "=="))
        for key in jwks["keys"]
        if key.get("kty") == "OKP" and key.get("crv") == "Ed25519"
    ]

    def judge(body: bytes, headers: dict[str, str]) -> str | None:
        names = ("request-id", "user-id", "timestamp", "signature")
        values = [headers.get(f"x-fal-webhook-{name}") for name in names]
        request_id, user_id, stamp, signature = values
        if request_id is None or user_id is None or stamp is None or signature is None:
            return "missing X-Fal-Webhook-* headers"
        if not stamp.isdigit() or abs(now() - int(stamp)) > 300:
            return f"timestamp {stamp} is not within 300 s"
        digest = hashlib.sha256(body).hexdigest()
        message = f"{request_id}\n{user_id}\n{stamp}\n{digest}".encode()
        for key in keys:
            try:
                key.verify(bytes.fromhex(signature), message)
            except (InvalidSignature, ValueError):
                continue
            return None
        return "no key of the JWKS verifies the signature"

    return judge


@dataclass
class HookReceiver:
    """A webhook receiver on 127.0.0.1 that asks ``judge`` about every delivery."""

    judge: Judge
    url: str = ""
    hooks: list[Hook] = field(default_factory=list)

    def accepted(self) -> list[Hook]:
        return [h for h in self.hooks if h.verdict is None]


@contextmanager
def hook_receiver(judge: Judge) -> Iterator[HookReceiver]:
    receiver = HookReceiver(judge)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            headers = {k.lower(): v for k, v in self.headers.items()}
            verdict = receiver.judge(body, headers)
            receiver.hooks.append(Hook(headers, body, verdict))
            self.send_response(204 if verdict is None else 400)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_hooks(dialect: str, text: str) -> Iterator[tuple[FakeProvider, ServerThread]]:
    """A real server (and its webhook dispatcher) playing ``text`` unscaled in ``dialect``."""
    with ServerThread(FakeProvider(text, dialect=dialect)) as server:
        yield server.provider, server


def sent_hooks(server: ServerThread, seconds: float = 0.8) -> list[Entry]:
    """Let the scenario play ``seconds``; the journal's webhook entries once nothing is in flight."""
    time.sleep(seconds)
    assert server.dispatcher.wait_idle(5.0)
    return [e for e in settled(server.provider) if e.kind == "webhook"]


def hook_rows(entries: list[Entry]) -> list[tuple[Any, ...]]:
    """What the journal says of each send: (event, job status, delivery, attempt, status code)."""
    return [(e.event, e.job_status, e.delivery, e.attempt, e.status_code) for e in entries]
