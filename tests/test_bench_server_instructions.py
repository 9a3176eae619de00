"""``benchmarks/bench_server_instructions.py``'s parts: reading answers off a socket, the requests
it sends, and its wrk-like client against a small server. The benchmark itself (valgrind,
minutes) is run by hand."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from .bench_scripts import load_script

ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-type: text/plain\r\n\r\nhello"


def _script() -> ModuleType:
    return load_script("bench_server_instructions")


def test_an_answer_is_its_status_code_and_length_once_all_there() -> None:
    parse = _script().parse_response
    assert parse(ANSWER) == (200, len(ANSWER))
    assert parse(ANSWER + b"HTTP/1.1 404") == (200, len(ANSWER))
    assert parse(bytearray(ANSWER)) == (200, len(ANSWER))


@pytest.mark.parametrize("cut", [0, 10, ANSWER.index(b"\r\n\r\n") + 2, len(ANSWER) - 1])
def test_an_answer_not_all_there_is_none(cut: int) -> None:
    assert _script().parse_response(ANSWER[:cut]) is None


def test_content_length_is_read_in_any_case_and_spacing() -> None:
    answer = b"HTTP/1.1 202 Accepted\r\nContent-Length:2\r\n\r\n{}"
    assert _script().parse_response(answer) == (202, len(answer))


def test_a_head_that_is_no_http_answer_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^not an HTTP/1.1 answer: b'SSH-2.0 x'$"):
        _script().parse_response(b"SSH-2.0 x\r\n\r\n")


def test_an_answer_without_content_length_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^an answer without Content-Length: b'HTTP/1.1 200 OK'$"):
        _script().parse_response(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")


def test_status_reads_are_sent_as_wrk_sends_them() -> None:
    bench = _script()
    assert bench.status_request("/v1/jobs/j1", 8000) == (
        b"GET /v1/jobs/j1 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n"
    )
    assert bench.status_request("/v1/jobs/j1", 8000, "req-7") == (
        b"GET /v1/jobs/j1 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nX-Request-Id: req-7\r\n\r\n"
    )


def test_submits_carry_their_body_and_its_length() -> None:
    assert _script().submit_request(b'{"prompt": "x"}', 80) == (
        b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1:80\r\n"
        b"Content-Type: application/json\r\nContent-Length: 15\r\n\r\n"
        b'{"prompt": "x"}'
    )


def test_requests_are_numbered_each_with_an_id_and_a_prompt_of_its_own() -> None:
    bench = _script()
    reads = bench.requests_of("status", "/v1/jobs/j", 80, request_ids=True)
    assert [next(reads) for _ in range(2)] == [
        bench.status_request("/v1/jobs/j", 80, "req-1"),
        bench.status_request("/v1/jobs/j", 80, "req-2"),
    ]
    submits = bench.requests_of("submit", "/v1/jobs/j", 80, request_ids=False)
    first, second = next(submits), next(submits)
    assert first == bench.submit_request(bench._prompt(1), 80)
    assert second == bench.submit_request(bench._prompt(2), 80)
    assert len(first) != len(second)


class _Server:
    """Answers every request head it reads on any connection with ``ANSWER``, the answers to
    requests that came together written together; counts the connections and requests."""

    def __init__(self, close_after: int | None = None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.requests = 0
        self.close_after = close_after
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            buffer = b""
            while chunk := conn.recv(65536):
                buffer += chunk
                heads = buffer.count(b"\r\n\r\n")
                buffer = buffer.rsplit(b"\r\n\r\n", 1)[1]
                self.requests += heads
                if self.close_after is not None and self.requests >= self.close_after:
                    return
                conn.sendall(ANSWER * heads)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # wakes the accepting thread (Linux)
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self._accepting.join(5)
        for thread in self._threads:
            thread.join(5)


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server()
    yield running
    running.close()


def test_the_client_sends_exactly_count_requests_over_its_connections(server: _Server) -> None:
    bench = _script()
    requests = bench.requests_of("status", "/v1/jobs/j", server.port, request_ids=False)
    codes = bench.drive(server.port, requests, 50, connections=4, seconds=30)
    assert codes == {200: 50}
    assert (server.connections, server.requests) == (4, 50)


def test_no_more_connections_than_requests(server: _Server) -> None:
    bench = _script()
    requests = bench.requests_of("status", "/v1/jobs/j", server.port, request_ids=False)
    assert bench.drive(server.port, requests, 3, connections=16, seconds=30) == {200: 3}
    assert server.connections == 3


def test_a_connection_closed_before_its_answer_fails_the_run() -> None:
    closing = _Server(close_after=1)
    try:
        bench = _script()
        requests = bench.requests_of("status", "/", closing.port, request_ids=False)
        with pytest.raises(
            RuntimeError, match=r"^the server closed a connection before answering$"
        ):
            bench.drive(closing.port, requests, 5, connections=1, seconds=30)
    finally:
        closing.close()


def test_exchange_reads_one_answer_and_its_body(server: _Server) -> None:
    bench = _script()
    request = bench.status_request("/", server.port)
    assert bench.exchange(server.port, request, 30) == (200, b"hello")


def test_exchange_gives_up_when_nothing_listens() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    bench = _script()
    with pytest.raises(RuntimeError, match=rf"^nothing listening on port {port} after 0.1 s$"):
        bench.exchange(port, bench.status_request("/", port), 0.1)


def test_a_runs_thread_files_are_found_in_thread_order(tmp_path: Path) -> None:
    out = tmp_path / "callgrind.out"
    for name in ("callgrind.out-10", "callgrind.out-02", "callgrind.out-01", "callgrind.out-x"):
        (tmp_path / name).write_text("")
    (tmp_path / "other.out-03").write_text("")
    assert [f.name for f in _script().thread_files(out)] == [
        "callgrind.out-01",
        "callgrind.out-02",
        "callgrind.out-10",
    ]


def test_a_run_without_thread_files_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"^callgrind wrote no callgrind.out-NN files in "):
        _script().thread_files(tmp_path / "callgrind.out")
