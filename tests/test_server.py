"""The server: the fast stack (httptools + uvloop) by default, h11 + asyncio as the fallback."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import http.client as http_client
import json
import logging
import os
import queue
import re
import signal
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import httpx
import pytest
from uvicorn.protocols.http.h11_impl import H11Protocol

from fakeprovider import server as server_module
from fakeprovider.journal import BatchedSink, read_journal
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import parse_scenario
from fakeprovider.server import SERVING_GC_THRESHOLD, ServerThread, _serving_gc, resolve_stack

INSTANT = "name: instant\njobs: [{timeline: [{status: succeeded}], result: {size_bytes: 16}}]\n"


def _provider() -> FakeProvider:
    return FakeProvider(parse_scenario(INSTANT))


def _address(server: ServerThread) -> tuple[str, int]:
    """The host and port ``server`` listens on."""
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def _submit_and_read(url: str) -> tuple[int, str]:
    with httpx.Client(base_url=url) as http:
        job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        answer = http.get(f"/v1/jobs/{job}")
    return answer.status_code, answer.json()["status"]


def test_the_default_server_runs_on_httptools_and_uvloop_when_they_are_installed() -> None:
    pytest.importorskip("httptools")
    pytest.importorskip("uvloop")
    with ServerThread(_provider()) as running:
        config = running._server.config
        assert (running.http, running.loop) == ("httptools", "uvloop")
        # By name, not identity: a test that re-imports uvicorn leaves two copies of the class.
        bases = {(c.__module__, c.__qualname__) for c in config.http.__mro__}  # type: ignore[union-attr]
        assert ("uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol") in bases
        assert config.loop == "uvloop"
        assert _submit_and_read(running.url) == (200, "succeeded")


def test_the_server_thread_runs_its_event_loop_on_uvloop() -> None:
    uvloop = pytest.importorskip("uvloop")
    loops: list[asyncio.AbstractEventLoop] = []
    server = ServerThread(_provider())
    original = server._server.main_loop

    async def spy() -> None:  # records the running loop, then serves as usual
        loops.append(asyncio.get_running_loop())
        await original()

    server._server.main_loop = spy  # type: ignore[method-assign]
    with server:
        assert _submit_and_read(server.url) == (200, "succeeded")
    assert [type(loop) for loop in loops] == [uvloop.Loop]


def test_the_webhook_dispatcher_runs_on_the_event_loop_the_server_serves_on() -> None:
    uvloop = pytest.importorskip("uvloop")
    with ServerThread(_provider()) as fast, ServerThread(_provider(), loop="asyncio") as slow:
        assert type(fast.dispatcher._loop) is uvloop.Loop
        assert isinstance(slow.dispatcher._loop, asyncio.SelectorEventLoop)


def test_serve_forever_gives_its_webhook_dispatcher_the_loop_it_serves_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uvloop = pytest.importorskip("uvloop")
    factories: list[object] = []
    made = server_module.Dispatcher

    def recording(*args: object, **kwargs: object) -> object:
        factories.append(kwargs.get("loop_factory"))
        return made(*args, **kwargs)  # type: ignore[arg-type]

    def stop_once_serving(url: str) -> None:
        def stop() -> None:
            try:
                assert _submit_and_read(url) == (200, "succeeded")
            finally:
                os.kill(os.getpid(), signal.SIGTERM)  # handled by the server: it stops

        threading.Thread(target=stop).start()

    monkeypatch.setattr(server_module, "Dispatcher", recording)
    server_module.serve_forever(_provider(), port=0, on_ready=stop_once_serving)
    server_module.serve_forever(_provider(), port=0, on_ready=stop_once_serving, loop="asyncio")
    assert factories == [uvloop.new_event_loop, asyncio.new_event_loop]


def test_h11_and_asyncio_serve_when_asked_for() -> None:
    with ServerThread(_provider(), http="h11", loop="asyncio") as running:
        config = running._server.config
        assert (running.http, running.loop) == ("h11", "asyncio")
        assert issubclass(config.http, H11Protocol)  # type: ignore[arg-type]
        assert config.loop == "asyncio"
        assert _submit_and_read(running.url) == (200, "succeeded")


def test_auto_falls_back_to_h11_and_asyncio_when_the_fast_stack_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server_module, "_installed", lambda module: False)
    assert resolve_stack() == ("h11", "asyncio")
    with ServerThread(_provider()) as running:
        assert issubclass(running._server.config.http, H11Protocol)  # type: ignore[arg-type]
        assert _submit_and_read(running.url) == (200, "succeeded")


def test_asking_for_a_missing_fast_package_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server_module, "_installed", lambda module: False)
    http = (
        "http='httptools' needs the httptools package, which is not installed here;"
        " install it (pip install httptools) or use http='h11'"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(http)}$"):
        resolve_stack(http="httptools")
    loop = (
        "loop='uvloop' needs the uvloop package, which is not installed here;"
        " install it (pip install uvloop) or use loop='asyncio'"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(loop)}$"):
        resolve_stack(loop="uvloop")


def test_an_unknown_stack_name_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^http must be one of auto, httptools, h11, got 'h2'$"):
        resolve_stack(http="h2")
    with pytest.raises(
        ValueError, match=r"^loop must be one of auto, uvloop, asyncio, got 'trio'$"
    ):
        resolve_stack(loop="trio")


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_idle_connections_are_closed_on_either_parser(http: str) -> None:
    if http == "httptools":
        pytest.importorskip("httptools")
    with ServerThread(_provider(), http=http, idle_timeout=0.2) as running:
        host, port = _address(running)
        with socket.create_connection((host, port), timeout=10) as idle:
            assert idle.recv(1) == b""  # closed by the server (a hang would time out)
        with socket.create_connection((host, port), timeout=10) as trickle:
            trickle.sendall(b"GET /v1/jobs HTTP/1.1\r\n")  # a head that never ends
            assert trickle.recv(1) == b""
        with socket.create_connection((host, port), timeout=10) as kept:
            kept.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")
            assert kept.recv(12) == b"HTTP/1.1 200"
            kept.sendall(b"GET /v1/jo")  # the next head, trickled after an answer
            while kept.recv(65536):  # the rest of the answer, then the close
                pass


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_a_connection_answered_within_the_idle_timeout_each_time_stays_open(http: str) -> None:
    if http == "httptools":
        pytest.importorskip("httptools")
    with ServerThread(_provider(), http=http, idle_timeout=0.3) as running:
        host, port = _address(running)
        connection = http_client.HTTPConnection(host, port, timeout=10)
        try:
            sockets = []
            for _ in range(6):  # 0.6 s and more in all, never 0.3 s without an answer
                connection.request("GET", "/v1/jobs")
                answer = connection.getresponse()
                answer.read()
                assert answer.status == 200
                sockets.append(connection.sock)
                time.sleep(0.1)
            assert len(set(map(id, sockets))) == 1  # one connection all along, still open
            assert connection.sock is not None
            assert connection.sock.recv(1) == b""  # then closed 0.3 s after the last answer
        finally:
            connection.close()


def test_a_server_thread_writes_every_batched_entry_by_the_time_it_has_stopped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    with path.open("a", encoding="utf-8") as stream:
        # an interval far longer than the test: only stop() can have written the entries
        provider = FakeProvider(
            parse_scenario(INSTANT), journal_sink=BatchedSink(stream, interval=60)
        )
        with ServerThread(provider) as running, httpx.Client(base_url=running.url) as http:
            job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
            for _ in range(20):
                http.get(f"/v1/jobs/{job}")
        written = read_journal(path)
        provider.journal.close()
    assert [(e.kind, e.status_code) for e in written] == [("admin", None), ("submit", 202)] + 20 * [
        ("status", 200)
    ]


def test_serve_forever_writes_every_batched_entry_before_it_returns(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    urls: queue.Queue[str] = queue.Queue()

    def client() -> None:
        try:
            with httpx.Client(base_url=urls.get(timeout=10)) as http:
                job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
                for _ in range(20):
                    http.get(f"/v1/jobs/{job}")
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # handled by the server: it stops

    with path.open("a", encoding="utf-8") as stream:
        # an interval far longer than the test: only the server's stop can write the entries
        provider = FakeProvider(
            parse_scenario(INSTANT), journal_sink=BatchedSink(stream, interval=60)
        )
        requests = threading.Thread(target=client)
        requests.start()
        server_module.serve_forever(provider, port=0, on_ready=urls.put)
        requests.join(10)
        written = read_journal(path)
        provider.journal.close()
    assert [(e.kind, e.status_code) for e in written] == [("admin", None), ("submit", 202)] + 20 * [
        ("status", 200)
    ]


def test_serving_in_the_foreground_freezes_the_startup_heap_and_restores_the_collector() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with _serving_gc():
        assert gc.get_threshold() == SERVING_GC_THRESHOLD
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


class _RecordingTransport:
    """Just enough of an asyncio transport to see what goes out, in which writes."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"peername": ("127.0.0.1", 5000)}.get(name, default)

    def get_write_buffer_size(self) -> int:
        return 0

    def write_eof(self) -> None:
        self.writes.append(b"<eof>")


def _answer_two_connections(loop: object) -> None:
    """Two answers in the loop's turn, on connections of their own: the next turn holds its
    answers until it ends (a busy server's)."""
    for _ in range(2):
        transport = server_module._CoalescingTransport(_RecordingTransport(), loop)  # type: ignore[arg-type]
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")


def _busy(loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
    """``loop`` after a turn that answered two connections."""
    _answer_two_connections(loop)
    loop.run_until_complete(asyncio.sleep(0))
    return loop


def _coalescing() -> tuple[
    server_module._CoalescingTransport, _RecordingTransport, asyncio.AbstractEventLoop
]:
    """A connection on a busy server's loop (``_busy``)."""
    loop = _busy(asyncio.new_event_loop())
    raw = _RecordingTransport()
    return server_module._CoalescingTransport(raw, loop), raw, loop  # type: ignore[arg-type]


def _end_turn(loop: asyncio.AbstractEventLoop) -> None:
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()


def test_a_response_head_and_body_written_in_one_turn_leave_in_one_write() -> None:
    transport, raw, loop = _coalescing()
    transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    transport.write(b"{}")
    _end_turn(loop)
    assert raw.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]


def test_a_head_written_alone_leaves_when_the_loop_turn_ends() -> None:
    transport, raw, loop = _coalescing()
    transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert raw.writes == []
    _end_turn(loop)
    assert raw.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]


def test_a_large_body_goes_out_after_the_head_uncopied() -> None:
    transport, raw, loop = _coalescing()
    body = b"v" * (server_module._CoalescingTransport.JOIN + 1)
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(body)
    _end_turn(loop)
    assert raw.writes[0] == b"HTTP/1.1 200 OK\r\n\r\n"
    assert raw.writes[1] is body
    assert len(raw.writes) == 2


def test_closing_sends_the_held_head_before_the_connection_closes() -> None:
    transport, raw, loop = _coalescing()
    transport.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    transport.close()
    _end_turn(loop)
    assert raw.writes == [b"HTTP/1.1 400 Bad Request\r\n\r\n"]
    assert raw.closed


def test_aborting_drops_the_held_head_as_it_drops_the_rest() -> None:
    transport, raw, loop = _coalescing()
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.abort()
    _end_turn(loop)
    assert raw.writes == []
    assert raw.aborted


def test_the_coalescing_transport_passes_the_rest_of_the_interface_through() -> None:
    transport, raw, loop = _coalescing()
    assert transport.get_extra_info("peername") == ("127.0.0.1", 5000)
    assert transport.get_extra_info("sockname", "none") == "none"
    assert transport.get_write_buffer_size() == 0  # not its own: passed through
    assert transport.is_closing() is False
    raw.closed = True
    assert transport.is_closing() is True
    loop.close()


class _Cycle:
    """Just enough of uvicorn's request-response cycle for the transport to tell a head."""

    def __init__(self, started: bool, complete: bool = False) -> None:
        self.response_started = started
        self.response_complete = complete


class _Protocol:
    def __init__(self, cycle: _Cycle | None) -> None:
        self.cycle = cycle


def _answering(
    cycle: _Cycle | None,
) -> tuple[server_module._CoalescingTransport, _RecordingTransport, asyncio.AbstractEventLoop]:
    loop = _busy(asyncio.new_event_loop())
    raw = _RecordingTransport()
    protocol = _Protocol(cycle)
    return server_module._CoalescingTransport(raw, loop, protocol), raw, loop  # type: ignore[arg-type]


def test_the_head_of_the_response_in_progress_waits_for_its_body_not_for_the_turn() -> None:
    transport, raw, loop = _answering(_Cycle(started=True))
    transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    loop.run_until_complete(asyncio.sleep(0))  # a turn ends: nothing was scheduled for it
    assert raw.writes == []
    transport.write(b"{}")
    _end_turn(loop)
    assert raw.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]


@pytest.mark.parametrize(
    ("cycle", "data"),
    [
        (None, b"HTTP/1.1 400 Bad Request\r\n\r\n"),  # no request yet (uvicorn's own 400)
        (_Cycle(started=False), b"HTTP/1.1 100 Continue\r\n\r\n"),  # before the response
        (_Cycle(started=True, complete=True), b"HTTP/1.1 200 OK\r\n\r\n"),  # after it
        (_Cycle(started=True), b"5\r\nchunk\r\n"),  # a streamed body's chunk: not a head
    ],
)
def test_any_other_small_write_leaves_when_the_loop_turn_ends(
    cycle: _Cycle | None, data: bytes
) -> None:
    transport, raw, loop = _answering(cycle)
    transport.write(data)
    assert raw.writes == []
    _end_turn(loop)
    assert raw.writes == [data]


def _protocols(running: ServerThread) -> list[object]:
    return list(running._server.server_state.connections)


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_the_head_of_an_answer_without_a_body_leaves_at_the_answers_end(http: str) -> None:
    if http == "httptools":
        pytest.importorskip("httptools")
    with ServerThread(_provider(), http=http) as running:
        host, port = _address(running)
        with socket.create_connection((host, port), timeout=5) as sock:
            stream = sock.makefile("rb")
            for _ in range(2):  # a HEAD's head (uvicorn writes no body), then the connection kept
                sock.sendall(b"HEAD /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")
                head = []
                while (line := stream.readline()) not in (b"\r\n", b""):
                    head.append(line)
                assert head[0].startswith(b"HTTP/1.1 ")
            sock.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")
            assert stream.readline().startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_a_100_continue_goes_out_before_the_body_is_sent(http: str) -> None:
    if http == "httptools":
        pytest.importorskip("httptools")
    with ServerThread(_provider(), http=http) as running:
        host, port = _address(running)
        body = b'{"prompt": "x"}'
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(
                b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
            )
            stream = sock.makefile("rb")
            assert stream.readline() == b"HTTP/1.1 100 Continue\r\n"
            assert stream.readline() == b"\r\n"
            sock.sendall(body)
            assert stream.readline().startswith(b"HTTP/1.1 202")


def _uvicorns_on_response_complete_is_the_one_read() -> bool:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return server_module._written_from(
        HttpToolsProtocol.on_response_complete, server_module._ON_RESPONSE_COMPLETE
    )


@contextlib.contextmanager
def _three_reads_on_one_connection(running: ServerThread) -> Iterator[object]:
    """Three reads answered 200 on one kept-alive connection; yields its protocol while the
    connection is still open."""
    host, port = _address(running)
    connection = http_client.HTTPConnection(host, port, timeout=10)
    try:
        for _ in range(3):
            connection.request("GET", "/v1/jobs")
            answer = connection.getresponse()
            answer.read()
            assert answer.status == 200
        (protocol,) = _protocols(running)
        yield protocol
    finally:
        connection.close()


def test_on_httptools_an_answer_arms_no_timer_and_is_counted() -> None:
    pytest.importorskip("httptools")
    if not _uvicorns_on_response_complete_is_the_one_read():
        pytest.skip("this uvicorn's on_response_complete is another: uvicorn's own is used")
    with (
        ServerThread(_provider(), http="httptools") as running,
        _three_reads_on_one_connection(running) as protocol,
    ):
        # uvicorn's keep-alive timer is not armed: the idle timer, one a connection, is there
        assert protocol.timeout_keep_alive_task is None  # type: ignore[attr-defined]
        assert protocol._idle is not None  # type: ignore[attr-defined]
        assert running._server.server_state.total_requests == 3


def test_a_uvicorn_whose_on_response_complete_is_another_keeps_its_own_and_its_timer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("httptools")
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    monkeypatch.setattr(server_module, "_ON_RESPONSE_COMPLETE", frozenset({"0123456789abcdef"}))
    made = server_module._httptools_protocol()
    assert made.__name__ == "_UvicornsHttpToolsProtocol"
    assert made.on_response_complete is server_module._IdleTimeout.on_response_complete
    assert made.__mro__[2] is HttpToolsProtocol  # whose on_response_complete ours calls
    monkeypatch.setattr(server_module, "_HTTPTOOLS_PROTOCOL", [made])
    with (
        ServerThread(_provider(), http="httptools") as running,
        _three_reads_on_one_connection(running) as protocol,
    ):
        assert protocol.timeout_keep_alive_task is not None  # type: ignore[attr-defined]
        assert running._server.server_state.total_requests == 3


def test_written_from_compares_the_digest_of_a_functions_dedented_source() -> None:
    def answer() -> int:
        return 42

    text = "def answer() -> int:\n    return 42\n"
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert server_module._written_from(answer, frozenset({digest}))
    assert not server_module._written_from(answer, frozenset({"0123456789abcdef"}))
    assert not server_module._written_from(len, frozenset({digest}))  # no source: not read


def test_the_coalescing_transport_has_every_method_of_a_transport_of_its_own() -> None:
    # (a ``__getattr__`` would slow every attribute of the class down)
    own = vars(server_module._CoalescingTransport)
    assert {name for name in dir(asyncio.Transport) if not name.startswith("_")} <= set(own)
    assert "__getattr__" not in own


def test_lines_and_the_end_of_writing_go_out_after_what_is_held() -> None:
    transport, raw, loop = _coalescing()
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.writelines([b"a", b"b"])
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write_eof()
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nabHTTP/1.1 200 OK\r\n\r\n", b"<eof>"]
    _end_turn(loop)
    assert len(raw.writes) == 2


class _CountingLoop:
    """Just enough of an event loop to count the callbacks a turn's answers schedule."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], object]] = []

    def call_soon(self, callback: Callable[[], object]) -> None:
        self.callbacks.append(callback)

    def end_turn(self) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()


def _connections(
    loop: _CountingLoop, count: int
) -> list[tuple[server_module._CoalescingTransport, _RecordingTransport]]:
    made = []
    for _ in range(count):
        raw = _RecordingTransport()
        protocol = _Protocol(_Cycle(started=True))
        transport = server_module._CoalescingTransport(raw, loop, protocol)  # type: ignore[arg-type]
        made.append((transport, raw))
    return made


def _busy_counting_loop() -> _CountingLoop:
    loop = _CountingLoop()
    _answer_two_connections(loop)
    loop.end_turn()
    return loop


def test_the_answers_of_one_turn_go_out_together_when_it_ends_from_one_callback() -> None:
    loop = _busy_counting_loop()
    connections = _connections(loop, 3)
    for number, (transport, raw) in enumerate(connections):
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n")
        transport.write(b"%d" % number)
        assert raw.writes == []
    assert len(loop.callbacks) == 1
    loop.end_turn()
    assert [raw.writes for _, raw in connections] == [
        [b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n%d" % number] for number in range(3)
    ]
    connections[0][0].write(b"HTTP/1.1 200 OK\r\n\r\n")  # the next turn: a callback again
    connections[0][0].write(b"{}")
    assert len(loop.callbacks) == 1


def test_a_sequential_clients_answers_go_out_as_they_are_made() -> None:
    loop = _CountingLoop()
    ((transport, raw),) = _connections(loop, 1)
    for number in range(3):  # a turn of one answer each: the next turn holds nothing
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n")
        transport.write(b"%d" % number)
        assert raw.writes[-1] == b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n%d" % number
        loop.end_turn()
    assert len(raw.writes) == 3


def test_a_turn_holds_its_answers_only_after_a_turn_that_answered_more_than_one() -> None:
    loop = _CountingLoop()
    (one, one_raw), (other, other_raw) = _connections(loop, 2)

    def answer(transport: server_module._CoalescingTransport) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        transport.write(b"{}")

    answer(one)
    answer(other)  # the first turn: sent at once, both
    assert (len(one_raw.writes), len(other_raw.writes)) == (1, 1)
    loop.end_turn()
    answer(one)  # after a turn of two answers: held until the turn ends
    assert len(one_raw.writes) == 1
    loop.end_turn()
    assert len(one_raw.writes) == 2
    answer(one)  # after a turn of one answer: sent at once again
    assert len(one_raw.writes) == 3


def test_each_event_loop_sends_its_own_connections_answers() -> None:
    first, second = _busy_counting_loop(), _busy_counting_loop()
    ((one, one_raw),) = _connections(first, 1)
    ((other, other_raw),) = _connections(second, 1)
    for transport in (one, other):
        transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        transport.answered()
    first.end_turn()
    assert one_raw.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]
    assert other_raw.writes == []
    second.end_turn()
    assert other_raw.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]


class _RefusingTransport(_RecordingTransport):
    def write(self, data: bytes) -> None:
        raise RuntimeError("the loop refuses")


def test_a_connection_that_cannot_send_is_aborted_and_the_turns_others_still_go_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = _busy_counting_loop()
    refusing = _RefusingTransport()
    broken = server_module._CoalescingTransport(refusing, loop)  # type: ignore[arg-type]
    ((fine, fine_raw),) = _connections(loop, 1)
    broken.write(b"HTTP/1.1 200 OK\r\n\r\n")
    fine.write(b"HTTP/1.1 200 OK\r\n\r\n")
    fine.write(b"{}")
    with caplog.at_level(logging.ERROR, logger="fakeprovider.server"):
        loop.end_turn()
    assert refusing.aborted
    assert fine_raw.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    assert [r.getMessage() for r in caplog.records] == ["an answer could not be sent"]


def test_what_is_held_goes_out_before_a_write_too_large_to_join() -> None:
    loop = _CountingLoop()
    ((transport, raw),) = _connections(loop, 1)
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"x" * 100)
    large = b"v" * server_module._CoalescingTransport.JOIN
    transport.write(large)
    assert raw.writes[0] == b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 100
    assert raw.writes[1] is large
    loop.end_turn()  # nothing left held
    assert len(raw.writes) == 2


def _read_answers(stream: BinaryIO, count: int) -> list[tuple[int, object]]:
    """``count`` HTTP/1.1 answers read off ``stream``: each status code and JSON ``status``."""
    answers: list[tuple[int, object]] = []
    for _ in range(count):
        status = int(stream.readline().split()[1])
        length = 0
        while (line := stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        answers.append((status, json.loads(stream.read(length)).get("status")))
    return answers


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_pipelined_requests_are_answered_whole_and_in_order(http: str) -> None:
    with ServerThread(_provider(), http=http) as server:
        host, port = _address(server)
        job = httpx.post(f"{server.url}/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        read = f"GET /v1/jobs/{job} HTTP/1.1\r\nhost: {host}\r\n\r\n".encode()
        unknown = f"GET /v1/jobs/job_000000000000 HTTP/1.1\r\nhost: {host}\r\n\r\n".encode()
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(read + unknown + read)
            answers = _read_answers(sock.makefile("rb"), 3)
    assert answers == [(200, "succeeded"), (404, None), (200, "succeeded")]


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_a_connection_whose_reads_pipelining_paused_reads_again_after_the_answers(
    http: str,
) -> None:
    # uvicorn stops reading a connection while it answers one request and the next is already
    # in (and while a waiting request's body passes 64 KiB); the end of an answer reads again
    with ServerThread(_provider(), http=http) as server:
        host, port = _address(server)
        job = httpx.post(f"{server.url}/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        read = f"GET /v1/jobs/{job} HTTP/1.1\r\nhost: {host}\r\n\r\n".encode()

        def submit(size: int) -> bytes:
            body = json.dumps({"prompt": "w" * size}).encode()
            head = (
                f"POST /v1/jobs HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\n\r\n"
            )
            return head.encode() + body

        with socket.create_connection((host, port), timeout=5) as sock:
            stream = sock.makefile("rb")
            sock.sendall(read + submit(300_000) + submit(310_000))
            pipelined = _read_answers(stream, 3)
            sock.sendall(read)  # waits for ever (a timeout here) if reading never resumed
            after = _read_answers(stream, 1)
    assert pipelined == [(200, "succeeded"), (202, "succeeded"), (202, "succeeded")]
    assert after == [(200, "succeeded")]


def test_a_client_is_journaled_as_its_peer_whatever_x_forwarded_for_says() -> None:
    provider = _provider()
    with ServerThread(provider) as server:
        answer = httpx.post(
            f"{server.url}/v1/jobs",
            json={"prompt": "x"},
            headers={"x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https"},
        )
    assert answer.status_code == 202
    assert [e.client for e in provider.entries if e.kind == "submit"] == ["127.0.0.1"]


def test_an_event_loops_turn_does_not_keep_the_loop() -> None:
    loop = _CountingLoop()
    server_module._CoalescingTransport(_RecordingTransport(), loop)  # type: ignore[arg-type]
    assert loop in server_module._TURNS
    gone = weakref.ref(loop)
    del loop
    gc.collect()
    assert gone() is None
