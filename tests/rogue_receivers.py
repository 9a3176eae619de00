"""The rogues' gallery of webhook receivers: small loopback receivers, one correct, the others
each with one classic bug (see docs/invariants.md, ``webhook_ack``).

Every receiver is an ``http.server`` on 127.0.0.1 (port 0) in a thread; use it as a context
manager and give its ``url`` as the submit's ``callback_url``. It records what it did:
``processed`` is the business effect (one ``(webhook-id, event type, job id)`` per message it
acted on), ``answers`` every ``(webhook-id, status code)`` it sent back, and ``state`` the last
status it holds for each job. Subclasses override ``decide``; the base class does the rest.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

#: The bundled scenarios' default secret.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
TERMINAL = frozenset({"succeeded", "failed", "cancelled", "completed_with_errors"})


class Receiver:
    """The correct receiver: verify (signature and timestamp) with ``standardwebhooks``, then
    deduplicate by webhook-id, act on each message once, answer 204 at once; 401 when the
    verification fails. A late non-terminal event never moves a job back from a terminal one."""

    name = "correct"

    def __init__(self, secret: str = SECRET) -> None:
        self.webhook = Webhook(secret)
        self.secret = secret
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.processed: list[tuple[str, str, str]] = []
        self.answers: list[tuple[str, int]] = []
        self.state: dict[str, str] = {}
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    # -- what the receiver does (subclasses change this) ---------------------------------

    def decide(self, headers: dict[str, str], body: bytes) -> int:
        try:
            payload = self.webhook.verify(body, headers)
        except WebhookVerificationError:
            return 401
        if self.first_time(headers["webhook-id"]):
            self.process(headers["webhook-id"], payload)
        return 204

    # -- helpers --------------------------------------------------------------------------

    def first_time(self, msg_id: str) -> bool:
        """Mark ``msg_id`` seen; True when it was not seen before."""
        with self.lock:
            if msg_id in self.seen:
                return False
            self.seen.add(msg_id)
            return True

    def process(self, msg_id: str, payload: Any) -> None:
        """The business effect: record the event and move the job (never back from terminal)."""
        job = payload["data"]
        with self.lock:
            self.processed.append((msg_id, payload["type"], job["job_id"]))
            if self.state.get(job["job_id"]) not in TERMINAL:
                self.state[job["job_id"]] = job["status"]

    def signature_ok(self, headers: dict[str, str], body: bytes) -> bool:
        """The signature check alone, no timestamp check (what a hand-rolled verify does)."""
        stamp = datetime.fromtimestamp(int(headers["webhook-timestamp"]), tz=UTC)
        expected = self.webhook.sign(headers["webhook-id"], stamp, body.decode())
        return expected in headers["webhook-signature"].split(" ")

    # -- serving --------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status = receiver.decide(headers, body)
                with receiver.lock:
                    receiver.answers.append((headers.get("webhook-id", ""), status))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> Receiver:
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def events(self) -> list[str]:
        """The event types processed, in order."""
        with self.lock:
            return [event for _, event, _ in self.processed]


# -- the gallery ------------------------------------------------------------------------------


class NoVerify(Receiver):
    """Never verifies anything: deduplicates and acts on whatever arrives (accepts forged and
    stale deliveries: they reuse a known webhook-id, so it answers them 204 as duplicates)."""

    name = "no-verify"

    def decide(self, headers: dict[str, str], body: bytes) -> int:
        if self.first_time(headers["webhook-id"]):
            self.process(headers["webhook-id"], json.loads(body))
        return 204


class IgnoresTimestamps(Receiver):
    """Checks the signature by hand but not the timestamp's age (accepts a stale replay)."""

    name = "ignores-timestamps"

    def decide(self, headers: dict[str, str], body: bytes) -> int:
        if not self.signature_ok(headers, body):
            return 401
        if self.first_time(headers["webhook-id"]):
            self.process(headers["webhook-id"], json.loads(body))
        return 204


class DedupesBeforeVerifying(Receiver):
    """Answers a known webhook-id 200 before verifying: a forged copy of a message it has seen
    (or a stale replay) gets 200."""

    name = "dedupes-before-verifying"

    def decide(self, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            if headers["webhook-id"] in self.seen:
                return 200
        try:
            payload = self.webhook.verify(body, headers)
        except WebhookVerificationError:
            return 401
        if self.first_time(headers["webhook-id"]):
            self.process(headers["webhook-id"], payload)
        return 204


class SlowWorker(Receiver):
    """Verifies and deduplicates, then does the work (``work`` seconds) before answering."""

    name = "slow-worker"

    def __init__(self, secret: str = SECRET, *, work: float = 2.5) -> None:
        super().__init__(secret)
        self.work = work

    def decide(self, headers: dict[str, str], body: bytes) -> int:
        try:
            payload = self.webhook.verify(body, headers)
        except WebhookVerificationError:
            return 401
        if self.first_time(headers["webhook-id"]):
            time.sleep(self.work)  # rendering thumbnails, calling other services...
            self.process(headers["webhook-id"], payload)
        return 204


class ErrorsOnDuplicates(Receiver):
    """Verifies, then inserts the webhook-id into a unique column: the second delivery of an
    id fails the insert and the framework answers 500 (so the provider retries it)."""

    name = "errors-on-duplicates"

    def decide(self, headers: dict[str, str], body: bytes) -> int:
        try:
            payload = self.webhook.verify(body, headers)
        except WebhookVerificationError:
            return 401
        if not self.first_time(headers["webhook-id"]):
            return 500  # IntegrityError: duplicate key value violates unique constraint
        self.process(headers["webhook-id"], payload)
        return 204
