"""docs/webhooks.md, "Testing your webhook receiver": the example, run as a test.

A receiver that verifies with the reference library, deduplicates by webhook-id after
verifying, and answers at once, played against the bundled forged-webhook and
duplicate-webhook scenarios at 1/30 of their real durations.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from fakeprovider import FakeProvider, load_scenario
from fakeprovider.server import ServerThread

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # the scenarios' default secret


class MyReceiver(BaseHTTPRequestHandler):
    """The code under test: verify first, then deduplicate, then act; answer fast."""

    seen: ClassVar[set[str]] = set()
    events: ClassVar[list[tuple[str, str]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        try:
            payload = Webhook(SECRET).verify(body, dict(self.headers))
        except WebhookVerificationError:
            self.send_response(401)
        else:
            if self.headers["webhook-id"] not in self.seen:
                self.seen.add(self.headers["webhook-id"])
                self.events.append((payload["type"], payload["data"]["status"]))
            self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize("name", ["forged-webhook", "duplicate-webhook"])
def test_my_receiver(name):
    MyReceiver.seen, MyReceiver.events = set(), []
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), MyReceiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    callback = f"http://127.0.0.1:{receiver.server_address[1]}/webhooks"
    scenario = load_scenario(name, time_scale=1 / 30)  # a 60 s job takes 2 s
    try:
        with ServerThread(FakeProvider(scenario)) as fake:
            httpx.post(f"{fake.url}/v1/jobs", json={"prompt": "a cat", "callback_url": callback})
            time.sleep(2.5)
            assert fake.dispatcher.wait_idle(5.0)
            journal = [e for e in fake.provider.journal if e.kind == "webhook"]
    finally:
        receiver.shutdown()
        receiver.server_close()

    # acted on each message once, and never on a forged or stale one
    assert MyReceiver.events == (
        [("job.succeeded", "succeeded")]
        if name == "forged-webhook"
        else [("job.succeeded", "succeeded"), ("job.processing", "processing")]
    )
    # every genuine delivery answered 2xx, every forged or stale one 4xx
    assert {(e.delivery, e.status_code) for e in journal} == (
        {(None, 204), ("forged", 401), ("stale", 401)}
        if name == "forged-webhook"
        else {(None, 204), ("duplicate", 204), ("reordered", 204)}
    )
