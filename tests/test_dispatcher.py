"""The webhook dispatcher against a real receiver on loopback, with a real fakeprovider server."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from fakeprovider import FakeProvider
from fakeprovider.clock import VirtualClock
from fakeprovider.dispatcher import Dispatcher, redact_url
from fakeprovider.http import HttpRequest
from fakeprovider.journal import RetryAfterRecord, read_journal
from fakeprovider.server import ServerThread

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

#: What the receiver answers: (status, headers, seconds to sleep first).
Answer = tuple[int, dict[str, str], float]


@dataclass
class Received:
    at: float
    headers: dict[str, str]
    body: bytes

    @property
    def type(self) -> str:
        return str(json.loads(self.body)["type"])


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1 that records deliveries and answers as scripted."""

    answer: Callable[[int], Answer] = lambda n: (200, {}, 0.0)
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                number = len(receiver.received)
                receiver.received.append(
                    Received(
                        time.monotonic(), {k.lower(): v for k, v in self.headers.items()}, body
                    )
                )
                status, headers, sleep = receiver.answer(number)
                if sleep:
                    receiver.release.wait(sleep)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), rec.handler())
    server.daemon_threads = True
    server.block_on_close = False
    rec.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield rec
    rec.release.set()
    server.shutdown()
    server.server_close()


def scenario(receiver: Receiver, webhooks: str, timeline: str | None = None) -> str:
    timeline = timeline or (
        "      - status: queued\n"
        "      - {at: 100ms, status: processing}\n"
        "      - {at: 300ms, status: succeeded}\n"
    )
    return (
        "name: webhook-test\n"
        "jobs:\n"
        "  - poll_after: 1s\n"
        "    timeline:\n"
        f"{timeline}"
        "webhooks:\n"
        f"  url: {receiver.url}\n"
        f"  secret: {SECRET}\n"
        f"{webhooks}"
    )


@pytest.fixture
def serve() -> Iterator[Callable[..., ServerThread]]:
    servers: list[ServerThread] = []

    def start(text: str, **kwargs: object) -> ServerThread:
        server = ServerThread(FakeProvider(text, **kwargs)).start()  # type: ignore[arg-type]
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="module", autouse=True)
def _http() -> Iterator[None]:
    """One client for the module's submits (``submit``): making an httpx client loads the
    system's certificates, some 50 ms on a slow machine, and one test submits 200 times."""
    with httpx.Client() as client:
        _CLIENT.append(client)
        yield
        _CLIENT.clear()


_CLIENT: list[httpx.Client] = []


def submit(server: ServerThread, **body: object) -> str:
    answer = _CLIENT[0].post(f"{server.url}/v1/jobs", json={"prompt": "a cat", **body})
    assert answer.status_code == 202
    return str(answer.json()["job_id"])


def settle(server: ServerThread, seconds: float) -> None:
    """Let the scenario run ``seconds`` (real time), then wait for sends in flight."""
    time.sleep(seconds)
    assert server.dispatcher.wait_idle(5.0)


def webhook_rows(server: ServerThread) -> list[tuple[object, ...]]:
    return [
        (e.event, e.status_code, e.delivery, e.attempt, e.error_code)
        for e in server.provider.journal
        if e.kind == "webhook"
    ]


def test_a_provider_used_in_process_before_its_server_starts_is_followed_from_there_on(
    receiver: Receiver,
) -> None:
    queued = "      - status: queued\n"  # one state change per job, none sent
    provider = FakeProvider(scenario(receiver, "  events: [job.failed]\n", queued))
    headers = {"content-type": "application/json"}
    request = HttpRequest("POST", "/v1/jobs", headers=headers, body=b'{"prompt": "a cat"}')
    for _ in range(300):  # more state changes than an engine keeps unread
        reply = provider.receive(request)[0]
        assert reply.created
        provider.sent(reply, started=0.0, completed=0.0, status_code=202)
    assert provider.engine.changes_let_go > 0  # before any dispatcher could read them
    server = ServerThread(provider).start()
    try:
        submit(server)
        settle(server, 0.2)  # every change from the first kept one on is planned
        assert server.dispatcher.error is None
        assert receiver.received == []
    finally:
        server.stop()


def test_receiver_gets_every_scripted_delivery_and_duplicates_share_the_id(receiver, serve):
    server = serve(
        scenario(
            receiver,
            "  events: [job.queued, job.processing, job.succeeded]\n"
            "  duplicates: 1\n"
            "  duplicate_gap: 1s\n",
        )
    )
    job_id = submit(server)
    settle(server, 1.4)

    # sends 100 ms apart can arrive in either order on a loaded machine: the journal's rows
    # (below) hold the order they were sent in; the receiver's are grouped by type, where the
    # two sends of one change are a second apart
    by_type: dict[str, list[Received]] = {}
    for r in receiver.received:
        by_type.setdefault(r.type, []).append(r)
    assert {t: len(rs) for t, rs in by_type.items()} == {
        "job.queued": 2,
        "job.processing": 2,
        "job.succeeded": 2,
    }
    assert all(a.headers["webhook-id"] == b.headers["webhook-id"] for a, b in by_type.values())
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 3
    first, duplicate = by_type["job.succeeded"]
    assert first.body == duplicate.body
    # each timestamp is the clock when it was sent (not when it was due: on a loaded machine a
    # send is late by a fraction of a second, and the whole seconds of two sends 1 s apart can
    # then differ by 2); the duplicate went out no sooner than the gap after the first was due
    journal = server.provider.journal
    sends = [e for e in journal if e.kind == "webhook"]
    epoch = server.provider.clock.epoch
    assert sorted(int(r.headers["webhook-timestamp"]) for r in receiver.received) == sorted(
        math.floor(epoch + e.received_at) for e in sends
    )
    assert [int(r.headers["webhook-timestamp"]) for r in (first, duplicate)] == [
        math.floor(epoch + e.received_at) for e in (sends[2], sends[5])
    ]
    submitted = next(e for e in journal if e.kind == "submit").received_at
    assert sends[5].received_at >= submitted + 0.3 + 1.0 - 1e-9
    assert duplicate.headers["webhook-signature"] != first.headers["webhook-signature"]
    for delivery in receiver.received:
        payload = Webhook(SECRET).verify(delivery.body, delivery.headers)
        assert payload["data"]["job_id"] == job_id
    assert webhook_rows(server) == [
        ("job.queued", 200, None, 1, None),
        ("job.processing", 200, None, 1, None),
        ("job.succeeded", 200, None, 1, None),
        ("job.queued", 200, "duplicate", 1, None),
        ("job.processing", 200, "duplicate", 1, None),
        ("job.succeeded", 200, "duplicate", 1, None),
    ]


def _woken(dispatcher: Dispatcher) -> list[None]:
    woken: list[None] = []
    dispatcher.wake = lambda: woken.append(None)  # type: ignore[method-assign]
    return woken


def _submit_in_process(provider: FakeProvider) -> None:
    headers = {"content-type": "application/json"}
    request = HttpRequest("POST", "/v1/jobs", headers=headers, body=b'{"prompt": "a cat"}')
    reply = provider.receive(request)[0]
    assert reply.created
    provider.sent(reply, started=0.0, completed=0.0, status_code=202)


def test_a_change_that_sends_nothing_wakes_a_loop_asleep_past_the_next_tick_once(
    receiver: Receiver,
) -> None:
    # job.queued is not listed: its change sends nothing, but the job's processing step is
    # scheduled (after the change is announced) for 100 ms on, sooner than a sleeping loop
    # would look; a loop that ticks finds it at its next tick, unwoken
    provider = FakeProvider(scenario(receiver, "  events: [job.processing]\n"))
    dispatcher = Dispatcher(provider)  # not started: its loop is played by hand
    provider.observe(dispatcher._changed)
    woken = _woken(dispatcher)
    _submit_in_process(provider)
    assert woken == []
    dispatcher._asleep = True
    _submit_in_process(provider)
    _submit_in_process(provider)
    assert woken == [None]  # the first change only: the loop ticks while changes come
    assert not dispatcher._asleep


def test_a_turn_plans_by_the_events_of_the_scenario_it_plans_for(receiver: Receiver) -> None:
    # (whether a status's event is listed is kept per webhooks config, not across a load)
    provider = FakeProvider(
        scenario(receiver, "  events: [job.succeeded]\n  delay: 10s\n"), clock=VirtualClock()
    )
    dispatcher = Dispatcher(provider)  # not started: its turns are played by hand

    async def turn() -> list[str]:
        dispatcher._turn()
        return [item.delivery.event for _, _, item in dispatcher._queue]

    dispatcher._restart(provider.engine)
    _submit_in_process(provider)
    assert asyncio.run(turn()) == []
    provider.load(scenario(receiver, "  events: [job.queued]\n  delay: 10s\n"))
    dispatcher._turn()  # the new engine: the dispatcher starts again
    _submit_in_process(provider)
    assert asyncio.run(turn()) == ["job.queued"]


def test_a_listed_change_wakes_the_loop_however_long_it_sleeps(receiver: Receiver) -> None:
    provider = FakeProvider(scenario(receiver, "  events: [job.queued]\n"))
    dispatcher = Dispatcher(provider)
    provider.observe(dispatcher._changed)
    woken = _woken(dispatcher)
    _submit_in_process(provider)  # the loop is awake: only a listed change wakes it
    assert woken == [None]


def test_a_dispatcher_is_not_called_by_a_run_without_webhooks(receiver: Receiver) -> None:
    provider = FakeProvider(scenario(receiver, "  events: [job.queued]\n"))
    with Dispatcher(provider) as dispatcher:
        assert provider.engine.on_change == dispatcher._changed
        provider.load("ambiguous-submit")  # no webhooks: a submit calls nothing
        assert provider.engine.on_change is None
        provider.load(scenario(receiver, "  events: [job.queued]\n"))
        assert provider.engine.on_change == dispatcher._changed
    assert provider.engine.on_change is None


def test_an_idle_loop_on_the_machine_clock_sleeps_until_something_is_due(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    server = serve(scenario(receiver, "  events: [job.succeeded]\n"))
    turns: list[float] = []
    turn = server.dispatcher._turn

    def counted() -> float:
        turns.append(server.provider.clock.now())
        return turn()

    server.dispatcher._turn = counted  # type: ignore[method-assign]
    server.dispatcher.wake()
    assert settle_until(server, lambda: len(turns) >= 1)
    time.sleep(0.5)
    # asleep after the wake's turn (REAL_TICK is 1 s): at a tick of 20 ms it was 25 more turns
    assert len(turns) <= 2


def test_wakes_that_come_before_the_loop_looks_share_one_turn(receiver: Receiver) -> None:
    provider = FakeProvider(scenario(receiver, "  events: [job.succeeded]\n"))
    with Dispatcher(provider) as dispatcher:
        assert dispatcher.wait_idle()
        time.sleep(0.1)  # asleep: nothing is due before REAL_TICK (1 s)
        turns: list[float] = []
        turn = dispatcher._turn

        def counted() -> float:
            turns.append(provider.clock.now())
            return turn()

        dispatcher._turn = counted  # type: ignore[method-assign]
        loop = dispatcher._loop
        assert loop is not None
        loop.call_soon_threadsafe(lambda: [dispatcher.wake() for _ in range(3)])
        time.sleep(0.3)
        assert len(turns) == 1


def test_a_loop_waiting_for_its_next_turn_runs_no_task_but_its_own(receiver: Receiver) -> None:
    # (asyncio.wait_for made a task of the wait, a timeout and the task's cancellation every
    # turn: at a tick of 20 ms under a stream of submits, most of the dispatcher's work)
    provider = FakeProvider(scenario(receiver, "  events: [job.succeeded]\n"))
    with Dispatcher(provider, tick=0.05) as dispatcher:
        loop = dispatcher._loop
        assert loop is not None
        counted: list[int] = []
        done = threading.Event()

        def count() -> None:
            counted.append(len(asyncio.all_tasks(loop)))
            done.set()

        for _ in range(3):
            done.clear()
            loop.call_soon_threadsafe(count)
            assert done.wait(5)
            time.sleep(0.03)
        dispatcher.wake()
        assert dispatcher.wait_idle()
    assert counted == [1, 1, 1]


def test_a_submit_to_a_sleeping_loop_has_its_webhook_sent_on_time(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    # the default events do not list job.queued: the submit's change sends nothing, and the
    # loop, asleep since nothing changed, must still look for the step 100 ms on (a loop that
    # slept on until REAL_TICK sent it 0.9 s late)
    timeline = "      - status: queued\n      - {at: 100ms, status: succeeded}\n"
    server = serve(scenario(receiver, "", timeline))
    assert settle_until(server, lambda: server.dispatcher._asleep)
    submit(server)
    assert settle_until(server, lambda: len(receiver.received) == 1)
    submitted, sent = (e.received_at for e in server.provider.journal)
    assert 0.1 <= sent - submitted < 0.5


def test_a_step_a_status_read_schedules_without_a_state_change_wakes_a_sleeping_loop(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    # the read takes a progress-only step (no state change to announce) and so schedules the
    # succeeded step 300 ms on; the loop, asleep since the submit, must be woken for it
    timeline = (
        "      - status: queued\n"
        "      - {after_polls: 1, progress: 10}\n"
        "      - {at: 300ms, status: succeeded}\n"
    )
    server = serve(scenario(receiver, "  events: [job.succeeded]\n", timeline))
    job_id = submit(server)
    assert settle_until(server, lambda: server.dispatcher._asleep)
    assert httpx.get(f"{server.url}/v1/jobs/{job_id}").status_code == 200
    assert settle_until(server, lambda: len(receiver.received) == 1)
    submitted, _, sent = (e.received_at for e in server.provider.journal)
    assert 0.3 <= sent - submitted < 0.7  # asleep until REAL_TICK it was 0.7 s late or more


def quiet_scenario(receiver: Receiver, webhooks: str, timeline: str | None = None) -> str:
    """``scenario`` with webhooks that name no url: only a callback_url is sent to."""
    return scenario(receiver, webhooks, timeline).replace(f"  url: {receiver.url}\n", "")


def test_submits_no_webhook_can_be_sent_for_neither_wake_nor_turn_the_loop(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    # no url in the webhooks and no callback_url in the bodies: these jobs' changes (their
    # submits' and their timed steps') can send nothing, so the loop sleeps through them
    server = serve(quiet_scenario(receiver, "  events: [job.processing, job.succeeded]\n"))
    dispatcher = server.dispatcher
    assert settle_until(server, lambda: dispatcher._asleep)
    turns: list[None] = []
    turn = dispatcher._safe_turn
    dispatcher._safe_turn = lambda: turns.append(None) or turn()  # type: ignore[method-assign,func-returns-value]
    began = time.monotonic()
    for _ in range(20):
        submit(server)
    time.sleep(0.4)  # past their processing (100 ms) and succeeded (300 ms) steps
    assert dispatcher.idle
    # (its REAL_TICK timer may come meanwhile; ticking, it turned some 20 times)
    assert len(turns) <= 1 + (time.monotonic() - began) // dispatcher.REAL_TICK
    assert dispatcher._asleep
    assert webhook_rows(server) == []


def test_a_callback_url_is_sent_to_on_time_when_the_webhooks_name_no_url(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    timeline = "      - status: queued\n      - {at: 100ms, status: succeeded}\n"
    server = serve(quiet_scenario(receiver, "", timeline))
    assert settle_until(server, lambda: server.dispatcher._asleep)
    for _ in range(10):
        submit(server)  # quiet jobs: nothing to send, nothing to wake the loop for
    job_id = submit(server, callback_url=receiver.url)
    assert settle_until(server, lambda: len(receiver.received) == 1)
    submitted = next(e.received_at for e in server.provider.journal if e.job_id == job_id)
    sent = next(e.received_at for e in server.provider.journal if e.kind == "webhook")
    assert 0.1 <= sent - submitted < 0.5
    settle(server, 0.2)
    assert webhook_rows(server) == [("job.succeeded", 200, None, 1, None)]
    assert json.loads(receiver.received[0].body)["data"]["job_id"] == job_id


def test_the_engine_calls_on_early_once_for_a_step_scheduled_before_the_wake(
    receiver: Receiver,
) -> None:
    provider = FakeProvider(scenario(receiver, "  events: [job.succeeded]\n"))
    engine = provider.engine
    early: list[None] = []
    engine.on_early = lambda: early.append(None)
    engine.wake_at = 0.05  # the job's next step (100 ms) is after it: no call
    _submit_in_process(provider)
    assert early == []
    engine.wake_at = 10.0
    _submit_in_process(provider)
    _submit_in_process(provider)
    assert early == [None]  # once: the dispatcher is awake after the first
    assert engine.wake_at == -math.inf


def test_a_reset_cuts_a_send_in_flight_short_even_when_its_receiver_answers_soon(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    receiver.answer = lambda n: (200, {}, 0.4)
    sink = io.StringIO()
    server = serve(scenario(receiver, "  events: [job.succeeded]\n"), journal_sink=sink)
    submit(server)
    assert settle_until(server, lambda: len(in_flight(server)) == 1)
    httpx.post(f"{server.url}/__admin/reset")  # makes no state change to wake the loop
    time.sleep(0.6)
    assert server.dispatcher.wait_idle(5.0)
    written = [e for e in read_journal(io.StringIO(sink.getvalue())) if e.kind == "webhook"]
    assert [(e.status_code, e.completed_at) for e in written] == [(None, None)]


def test_a_loop_on_a_clock_that_can_jump_looks_every_tick(receiver: Receiver) -> None:
    provider = FakeProvider(scenario(receiver, "  events: [job.succeeded]\n"), clock=VirtualClock())
    assert Dispatcher(provider)._cap() == Dispatcher(provider).tick == 0.02
    assert Dispatcher(FakeProvider(scenario(receiver, "  events: []\n")))._cap() == 1.0


def test_state_changes_are_delivered_at_their_scripted_time_without_polls(receiver, serve):
    server = serve(scenario(receiver, "  events: [job.processing, job.succeeded]\n"))
    submit(server)
    settle(server, 0.5)
    entries = [e for e in server.provider.journal if e.kind == "webhook"]
    assert [e.event for e in entries] == ["job.processing", "job.succeeded"]
    assert [e.kind for e in server.provider.journal] == ["submit", "webhook", "webhook"]
    # sent on the scenario clock, never before the change: 100 ms and 300 ms after the submit
    submitted = server.provider.journal[0].received_at
    assert [e.received_at - submitted >= at for e, at in zip(entries, [0.1, 0.3], strict=True)] == [
        True,
        True,
    ]
    # 200 ms apart, they can still arrive in either order on a loaded machine (the journal
    # above holds the order they were sent in)
    assert sorted(r.type for r in receiver.received) == ["job.processing", "job.succeeded"]


def test_a_503_is_retried_and_the_callback_url_wins(receiver, serve):
    receiver.answer = lambda n: (503, {}, 0.0) if n < 2 else (200, {}, 0.0)
    server = serve(
        scenario(
            receiver,
            "  events: [job.succeeded]\n  retry_schedule: [100ms]\n",
        ).replace(receiver.url, "http://127.0.0.1:9/nowhere")
    )
    submit(server, callback_url=receiver.url)
    settle(server, 0.7)
    assert webhook_rows(server) == [
        ("job.succeeded", 503, None, 1, None),
        ("job.succeeded", 503, None, 2, None),
        ("job.succeeded", 200, None, 3, None),
    ]
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    gaps = [b.at - a.at for a, b in zip(receiver.received, receiver.received[1:], strict=False)]
    assert all(0.07 <= gap < 0.3 for gap in gaps), gaps


def test_nothing_is_sent_after_a_410(receiver, serve):
    receiver.answer = lambda n: (410, {}, 0.0)
    server = serve(
        scenario(
            receiver,
            "  events: [job.queued, job.processing, job.succeeded]\n"
            "  duplicates: 2\n  duplicate_gap: 50ms\n  retry_schedule: [50ms]\n",
        )
    )
    submit(server)
    settle(server, 0.6)
    hooks = [e for e in server.provider.journal if e.kind == "webhook"]
    # every due send starts when due, not after the one before it is answered: on a loaded
    # machine the duplicate (due 50 ms after the first send) may start before the 410 has come
    # back, and is answered 410 too (the test used to expect one send and failed then).
    # Nothing starts after the 410: no duplicate, retry or later event (in an idle run, the
    # first send is the only one).
    assert webhook_rows(server)[0] == ("job.queued", 410, None, 1, None)
    gone = hooks[0].completed_at
    assert gone is not None
    assert [e for e in hooks if e.received_at >= gone] == []
    assert {(e.status_code, e.attempt) for e in hooks} == {(410, 1)}  # none retried
    assert len(receiver.received) == len(hooks)


def test_retry_after_of_the_receiver_is_honoured(receiver, serve):
    receiver.answer = lambda n: (429, {"Retry-After": "1"}, 0.0) if n == 0 else (200, {}, 0.0)
    server = serve(scenario(receiver, "  events: [job.queued]\n  retry_schedule: [50ms]\n"))
    submit(server)
    settle(server, 1.3)
    assert webhook_rows(server) == [
        ("job.queued", 429, None, 1, None),
        ("job.queued", 200, None, 2, None),
    ]
    first, second = receiver.received
    assert second.at - first.at >= 0.95
    assert server.provider.journal.filter(kind="webhook")[0].retry_after.raw == "1"


def test_a_receivers_retry_after_is_journaled_in_the_forms_the_fake_writes() -> None:
    from fakeprovider.dispatcher import _retry_after

    date = "Sun, 06 Nov 1994 08:49:37 GMT"  # Unix 784111777: clock reading 100 here
    epoch = 784111777 - 100
    assert _retry_after(httpx.Headers({"Retry-After": date}), 3.0, epoch) == RetryAfterRecord(
        date, 100.0, "retry-after", "imf"
    )
    assert _retry_after(httpx.Headers({"Retry-After": "7"}), 3.0, epoch) == RetryAfterRecord(
        "7", 10.0, "retry-after", "seconds"
    )
    # a receiver is read for Retry-After only, as before
    assert _retry_after(httpx.Headers({"retry-after-ms": "5"}), 3.0, epoch) is None


def test_attempts_stop_at_max_attempts_and_timeouts_are_journalled(receiver, serve):
    receiver.answer = lambda n: (200, {}, 5.0)
    server = serve(
        scenario(
            receiver,
            "  events: [job.queued]\n  timeout: 150ms\n  max_attempts: 2\n  retry_schedule: [50ms]\n",
        )
    )
    submit(server)
    settle(server, 0.6)
    assert webhook_rows(server) == [
        ("job.queued", None, None, 1, "timeout"),
        ("job.queued", None, None, 2, "timeout"),
    ]


def test_missing_forged_and_stale_deliveries(receiver, serve):
    server = serve(
        scenario(
            receiver,
            "  events: [job.processing, job.succeeded]\n"
            "  missing: [job.processing]\n"
            "  forged: [job.succeeded]\n"
            "  stale: [job.succeeded]\n"
            "  duplicate_gap: 100ms\n",
        )
    )
    submit(server)
    settle(server, 0.7)
    assert webhook_rows(server) == [
        ("job.processing", None, "missing", 0, None),
        ("job.succeeded", 200, None, 1, None),
        ("job.succeeded", 200, "forged", 1, None),
        ("job.succeeded", 200, "stale", 1, None),
    ]
    verdicts = []
    for delivery in receiver.received:
        try:
            Webhook(SECRET).verify(delivery.body, delivery.headers)
            verdicts.append("valid")
        except Exception as exc:
            verdicts.append(str(exc))
    # the journal holds them in the order sent (above); three sends 100 ms apart, each on a
    # connection of its own, reached the receiver in any order on a loaded machine
    assert sorted(verdicts) == sorted(
        ["valid", "No matching signature found", "Message timestamp too old"]
    )


def test_other_hosts_need_allow_webhook_host(serve):
    text = (
        "jobs:\n  - timeline: [{status: succeeded}]\n"
        "webhooks:\n  url: http://receiver.example/hooks\n"
    )
    server = serve(text)
    submit(server)
    settle(server, 0.1)
    assert webhook_rows(server) == [("job.succeeded", None, None, 1, "host_not_allowed")]


def test_a_reset_drops_planned_deliveries(receiver, serve):
    server = serve(scenario(receiver, "  events: [job.succeeded]\n  delay: 300ms\n"))
    submit(server)
    time.sleep(0.1)
    httpx.post(f"{server.url}/__admin/reset")
    settle(server, 0.6)
    assert receiver.received == []
    assert webhook_rows(server) == []


def test_a_slow_receiver_does_not_delay_status_responses(receiver, serve):
    # the receiver holds every delivery until the test ends: a fake that waited on its receiver
    # would answer no status read meanwhile (each read below would time out)
    receiver.answer = lambda n: (200, {}, 60.0)
    server = serve(
        scenario(
            receiver,
            "  events: [job.queued, job.processing, job.succeeded]\n  duplicates: 3\n"
            "  duplicate_gap: 50ms\n",
        )
    )
    job_id = submit(server)
    try:
        held = settle_until(server, lambda: len(in_flight(server)) >= 8)
        assert held, "the receiver never held eight deliveries at once"
        with httpx.Client(base_url=server.url, timeout=10.0) as client:
            answers = [client.get(f"/v1/jobs/{job_id}").status_code for _ in range(10)]
        assert answers == [200] * 10
        # still held (released below): the ten reads were answered without waiting for them
        assert len(in_flight(server)) >= 8
    finally:
        receiver.release.set()


def in_flight(server: ServerThread) -> list[object]:
    return [e for e in server.provider.journal if e.kind == "webhook" and e.completed_at is None]


def settle_until(server: ServerThread, condition: Callable[[], bool], limit: float = 5.0) -> bool:
    """Wait (at most ``limit`` seconds, polling) until ``condition()`` holds; whether it did."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("http://127.0.0.1:8/hooks", "http://127.0.0.1:8/hooks"),
        ("http://user:pw@127.0.0.1:8/hooks", "http://REDACTED@127.0.0.1:8/hooks"),
        (
            "http://127.0.0.1/h?token=abc&job=1&key=k&sig=s&X-Amz-Signature=x&code=c&page=2",
            "http://127.0.0.1/h?token=REDACTED&job=1&key=REDACTED&sig=REDACTED"
            "&X-Amz-Signature=REDACTED&code=REDACTED&page=2",
        ),
        (
            "http://127.0.0.1/h?access_token=a&api_key=b&secret=c&password=d&flag&empty=",
            "http://127.0.0.1/h?access_token=REDACTED&api_key=REDACTED&secret=REDACTED"
            "&password=REDACTED&flag&empty=",
        ),
    ],
)
def test_credentials_in_a_callback_url_are_redacted(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def test_the_journal_and_the_log_never_hold_a_callback_urls_credentials(
    receiver, serve, caplog: pytest.LogCaptureFixture
):
    server = serve(scenario(receiver, "  events: [job.succeeded]\n"))
    secret_url = receiver.url.replace("http://", "http://hook:pa55@") + "?token=t0ps3cret&job=7"
    submit(server, callback_url=secret_url)
    with caplog.at_level(logging.WARNING, logger="fakeprovider.webhooks"):
        submit(server, callback_url="http://me:pa55@receiver.example/h?sig=t0ps3cret")
        settle(server, 0.6)
    assert len(receiver.received) == 1  # the real URL, credentials and all, was used
    written = server.provider.journal.to_jsonl()
    assert "t0ps3cret" not in written
    assert "pa55" not in written
    sent = [e for e in server.provider.journal if e.kind == "webhook"]
    assert [(e.client.split(":")[0], e.path, e.error_code) for e in sent] == [
        ("REDACTED@127.0.0.1", "/hooks?token=REDACTED&job=7", None),
        ("REDACTED@receiver.example", "/h?sig=REDACTED", "host_not_allowed"),
    ]
    assert [r.getMessage() for r in caplog.records] == [
        "not sending job.succeeded to http://REDACTED@receiver.example/h?sig=REDACTED: only"
        " loopback hosts are allowed unless you pass --allow-webhook-host"
    ]


def test_a_send_in_flight_at_a_reset_is_written_to_the_journal_file(receiver, serve):
    receiver.answer = lambda n: (200, {}, 5.0)  # holds the delivery until released
    sink = io.StringIO()
    server = serve(scenario(receiver, "  events: [job.succeeded]\n"), journal_sink=sink)
    submit(server)
    assert settle_until(server, lambda: len(in_flight(server)) == 1)
    httpx.post(f"{server.url}/__admin/reset")
    assert server.dispatcher.wait_idle(5.0)
    written = [e for e in read_journal(io.StringIO(sink.getvalue())) if e.kind == "webhook"]
    assert [(e.event, e.status_code, e.completed_at, e.error_code) for e in written] == [
        ("job.succeeded", None, None, None)  # sent, never answered: judged by no rule
    ]
    assert webhook_rows(server) == []  # the new run starts clean


def test_a_scenario_load_between_the_dispatchers_check_and_its_read_is_told_apart(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    # The dispatcher checks the engine, then reads its changes; a load landing in between used
    # to have the old engine's cursor read on the new engine: a ValueError that ended the
    # dispatcher for good, or an engine without webhooks told to keep every change for ever.
    server = serve("slow-success")
    dispatcher, provider = server.dispatcher, server.provider
    make_client = dispatcher._http
    loads: list[str] = []

    def load_meanwhile() -> object:
        if not loads:
            loads.append("slow-success")
            provider.load("slow-success")  # no webhooks: nothing may be kept for a reader
        return make_client()

    dispatcher._http = load_meanwhile  # type: ignore[method-assign]
    provider.load(scenario(receiver, "  events: [job.succeeded]\n"))
    dispatcher.wake()
    deadline = time.monotonic() + 5
    while (not loads or provider.engine is not dispatcher._engine) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert loads == ["slow-success"]
    for _ in range(200):  # more state changes than the engine keeps
        submit(server)
    assert provider.engine._wanted is None
    assert len(provider.engine.changes) < 2 * provider.engine.keep_changes + 64
    assert dispatcher.error is None
    provider.load(scenario(receiver, "  events: [job.succeeded]\n"))
    submit(server)
    settle(server, 0.5)
    assert [r.type for r in receiver.received] == ["job.succeeded"]


def test_a_failed_turn_is_logged_and_the_dispatcher_goes_on(
    receiver: Receiver, serve: Callable[..., ServerThread], caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(scenario(receiver, "  events: [job.succeeded]\n"))
    dispatcher = server.dispatcher
    turn = dispatcher._turn
    failures: list[int] = []

    def failing_turn() -> float:
        if len(failures) < 3:
            failures.append(1)
            raise RuntimeError("a bug in a turn")
        return turn()

    with caplog.at_level(logging.ERROR, logger="fakeprovider.webhooks"):
        dispatcher._turn = failing_turn  # type: ignore[method-assign]
        dispatcher.wake()
        deadline = time.monotonic() + 5
        while len(failures) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        submit(server)
        settle(server, 0.5)
    assert [r.type for r in receiver.received] == ["job.succeeded"]
    assert dispatcher.error is None
    assert [r.getMessage() for r in caplog.records] == [
        "the webhook dispatcher failed a turn (1 so far); it starts again from now",
        "the webhook dispatcher failed a turn (2 so far); it starts again from now",
    ]


def test_without_reorder_the_dispatcher_keeps_no_changes_once_planned(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    # Only ``reorder`` sends a job's earlier changes again. A server used to keep every change
    # of every job for ever (a view and two dicts each), which grew with every submit and made
    # the collector's middle-generation scans of a submit stream last tens of milliseconds.
    server = serve(scenario(receiver, "  events: [job.processing, job.succeeded]\n"))
    for _ in range(3):
        submit(server)
    settle(server, 0.6)
    assert sorted(r.type for r in receiver.received) == 3 * ["job.processing"] + 3 * [
        "job.succeeded"
    ]
    assert server.dispatcher._history == {}


def test_with_reorder_the_earlier_changes_are_sent_after_the_terminal_one(
    receiver: Receiver, serve: Callable[..., ServerThread]
) -> None:
    webhooks = "  events: [job.processing, job.succeeded]\n  reorder: true\n"
    server = serve(scenario(receiver, webhooks))
    submit(server)
    settle(server, 0.6)
    assert [r.type for r in receiver.received] == ["job.succeeded", "job.processing"]
