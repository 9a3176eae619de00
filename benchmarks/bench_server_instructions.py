"""Instructions per request of the whole server process: ``fakeprovider serve`` against bare
Starlette on uvicorn, both on httptools + uvloop, over loopback sockets.

``bench_instructions.py`` calls the ASGI apps directly: what uvicorn, uvloop and httptools do
around them (parsing, the scope, the cycle, the writes, the keep-alive timers), and what
fakeprovider's server adds around uvicorn (``server.py``: the transport that joins an answer's
head and body, the idle timeout), are not in it, while wrk sees them. Here each server runs as
``bench_wrk.py`` starts it (``fakeprovider serve long-render --journal FILE --port P``, and its
bare app answering the fake's own bytes), under valgrind's callgrind, every thread counted (the
journal's writer too), and this process drives it over 16 keep-alive connections as ``wrk
-c16`` does (raw sockets: a request sent on a connection as soon as its answer is read whole).
Each server runs twice, with N1 and N2 requests after the same start-up, submit and warm-up;
the difference divided by N2 - N1 is what one request costs the server, start-up and shutdown
cancelled out. The ratio (bare / fake) is what wrk's CPU ratio should follow.

Two things differ from ``bench_wrk.py``'s fake, both for valgrind's some fifty-fold slower
runs: ``--time-scale 100`` (long-render's job stays queued for 2,000 s, so every read finds it
queued, as wrk's do), and what the server's other threads do by the machine's clock
(``SERVE``): woken every 50 ms, the journal's writer alone added some 30,000 instructions a
request that wrk's runs do not pay. User-space instructions only: the kernel's part (the socket
syscalls) is not counted. What still runs by the clock (uvicorn's tick every 0.1 s, the idle
timers) is counted for as long as a run lasts: a few hundred instructions a request. So is the
webhook dispatcher's turn every 20 ms while state changes come (every submit to long-render
makes one): under valgrind a turn every few submits, where wrk's runs have one every few
hundred, so its thread's count a submit grows with the machine's load (10-20k on a busy
machine). Each thread is counted apart: the main thread's count (the event loop: uvicorn, the
app), printed beside the total and ``*_main_thread`` in ``--json``, does not move with load.
Of it, libcrypto's own code is printed too (``*_libcrypto``): a submit's body digested by
OpenSSL's SHA-256, which valgrind runs without the CPU's SHA instructions (SHA-NI), a path
that natively takes some 2.7x the CPU (3.8 against 1.4 us for the bench's 1.5 kB bodies).

Needs ``valgrind`` (Debian: ``apt-get install valgrind``); 3 to 6 minutes with the defaults.

    python benchmarks/bench_server_instructions.py [--n1 500] [--n2 2500] [--kinds status,submit]
        [--request-ids] [--baseline DIR] [--keep DIR] [--json]

``--baseline DIR``: also measure the fakeprovider of another checkout (its ``fakeprovider serve``
run from DIR). ``--request-ids``: every request carries an ``X-Request-Id`` of its own.
``--keep DIR``: keep callgrind's output files (``callgrind_annotate`` reads them), one a thread
(``....t01`` the main thread's).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:  # the sibling scripts this one borrows from
    sys.path.insert(0, str(HERE))

from bench_instructions import (  # noqa: E402
    _prompt,
    callgrind_object_cost,
    callgrind_total,
    per_request,
)
from bench_wrk import BARE, SCENARIO, SUBMIT_BODY  # noqa: E402

HOST = "127.0.0.1"
#: Keep-alive connections, as ``wrk -c16`` (bench_wrk.py's load).
CONNECTIONS = 16
#: Requests after the submit, before the measured ones (the same in both runs).
WARMUP = 300
#: Seconds a server under valgrind may take to answer its first request, and a whole run.
READY_SECONDS = 180.0
RUN_SECONDS = 900.0
KINDS = ("status", "submit")
#: ``--time-scale``: long-render's job stays queued for 2,000 s rather than 20 s, so that every
#: read of a run under valgrind (a minute or more on a busy machine) finds it queued, as wrk's
#: reads, 11 s after the submit, do.
TIME_SCALE = "100"
#: ``python -m fakeprovider serve ...`` (``sys.argv[1:]``), but for what runs by the machine's
#: clock in the server's other threads, which valgrind's some fifty-fold slower run would count
#: against the requests: the journal's writer wakes every 60 s rather than every 50 ms
#: (``BatchedSink``'s ``interval``; it still wakes for every 4,096 lines and writes them all),
#: the webhook dispatcher's idle loop every 60 s rather than every second (``REAL_TICK``), and the
#: dispatcher's HTTP client (httpx imported, a TLS context) is made before serving rather than
#: on its thread while the first requests are answered: under valgrind that took longer than a
#: short run, and a long run counted the rest of it (some 40,000 instructions a request).
SERVE = """
import sys
from fakeprovider import dispatcher, journal
journal.BatchedSink.__init__.__kwdefaults__["interval"] = 60.0
dispatcher.Dispatcher.REAL_TICK = 60.0
start = dispatcher.Dispatcher.start
def started(self, *args, **kwargs):
    self._http()
    return start(self, *args, **kwargs)
dispatcher.Dispatcher.start = started
from fakeprovider.cli import main
sys.exit(main(sys.argv[1:]))
"""


def parse_response(buffer: bytes | bytearray) -> tuple[int, int] | None:
    """The status code of the HTTP/1.1 answer at the start of ``buffer`` and its length in bytes
    (head and ``Content-Length`` body), or None while it is not all there. Raises ValueError for
    a head that is no HTTP/1.1 answer or has no ``Content-Length`` (every answer here has one)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(buffer[:end]).split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP/1.1 answer: {lines[0][:80]!r}")
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None:
        raise ValueError(f"an answer without Content-Length: {lines[0][:80]!r}")
    total = end + 4 + length
    return (int(parts[1]), total) if len(buffer) >= total else None


def status_request(path: str, port: int, request_id: str | None = None) -> bytes:
    """A status read as ``wrk``'s GET script sends it (with ``X-Request-Id`` when given)."""
    head = f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
    if request_id is not None:
        head += f"X-Request-Id: {request_id}\r\n"
    return (head + "\r\n").encode()


def submit_request(body: bytes, port: int, request_id: str | None = None) -> bytes:
    """A submit as ``wrk``'s POST script sends it (with ``X-Request-Id`` when given)."""
    head = f"POST /v1/jobs HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
    if request_id is not None:
        head += f"X-Request-Id: {request_id}\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def requests_of(
    kind: str, path: str, port: int, *, request_ids: bool, start: int = 0
) -> Iterator[bytes]:
    """The requests of ``kind`` numbered from ``start``: status reads of ``path``, or submits,
    each a prompt of its own and of its own length (``bench_instructions._prompt``, the prompts
    of ``bench_wrk.py``'s script)."""
    n = start
    while True:
        n += 1
        request_id = f"req-{n}" if request_ids else None
        if kind == "status":
            yield status_request(path, port, request_id)
        else:
            yield submit_request(_prompt(n), port, request_id)


def drive(
    port: int,
    requests: Iterator[bytes],
    count: int,
    *,
    connections: int = CONNECTIONS,
    seconds: float = RUN_SECONDS,
    connect: Callable[[tuple[str, int]], socket.socket] = socket.create_connection,
) -> Counter[int]:
    """Send ``count`` requests over ``connections`` keep-alive connections, each the next as
    soon as its answer is read whole (as ``wrk`` does); the answers' status codes, counted.
    Raises RuntimeError past ``seconds`` or when the server closes a connection early."""
    deadline = time.monotonic() + seconds
    codes: Counter[int] = Counter()
    selector = selectors.DefaultSelector()
    sockets: list[socket.socket] = []
    sent = 0
    try:
        for _ in range(min(connections, count)):
            sock = connect((HOST, port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sockets.append(sock)
            sock.sendall(next(requests))
            sent += 1
            selector.register(sock, selectors.EVENT_READ, bytearray())
        while sum(codes.values()) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{sum(codes.values())} of {count} answers in {seconds:g} s")
            for key, _ in selector.select(min(left, 1.0)):
                sock, buffer = key.fileobj, key.data
                assert isinstance(sock, socket.socket)
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("the server closed a connection before answering")
                buffer += chunk
                while (answer := parse_response(buffer)) is not None:
                    code, length = answer
                    codes[code] += 1
                    del buffer[:length]
                    if sent < count:
                        sock.sendall(next(requests))
                        sent += 1
    finally:
        selector.close()
        for sock in sockets:
            sock.close()
    return codes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def exchange(port: int, request: bytes, seconds: float) -> tuple[int, bytes]:
    """``request`` sent on a connection of its own, retried while the port refuses connections
    (the server still starting): the answer's status code and body, waited for as long as
    ``seconds`` allow."""
    deadline = time.monotonic() + seconds
    while True:
        left = max(deadline - time.monotonic(), 1.0)
        try:
            sock = socket.create_connection((HOST, port), timeout=left)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"nothing listening on port {port} after {seconds:g} s"
                ) from None
            time.sleep(0.05)
            continue
        with sock:
            sock.sendall(request)
            buffer = bytearray()
            while (answer := parse_response(buffer)) is None:
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("the server closed the connection before answering")
                buffer += chunk
            code, length = answer
            return code, bytes(buffer[buffer.find(b"\r\n\r\n") + 4 : length])


@dataclass(frozen=True)
class Run:
    """What one server run counted."""

    instructions: int
    #: Of them, the main thread's (the event loop's: uvicorn, the app); the rest are the other
    #: threads' (the journal's writer, the webhook dispatcher), which run by the clock too.
    main_thread: int
    #: Of the main thread's, those in libcrypto's own code (the body's SHA-256 digest, a
    #: submit's): valgrind runs OpenSSL without the CPU's SHA instructions.
    libcrypto: int
    #: The answers' status codes, counted (the warm-up's and the measured requests').
    codes: dict[int, int]
    #: The last status read's body (its job still queued in both runs, or the runs differ).
    last_body: bytes


def _fake_command(port: int, journal: Path, script: str | None = None) -> list[str]:
    head = ["-c", script] if script is not None else ["-m", "fakeprovider"]
    return [
        *(sys.executable, *head, "serve", SCENARIO, "--port", str(port)),
        *("--journal", str(journal), "--time-scale", TIME_SCALE),
        *("--http", "httptools", "--loop", "uvloop"),
    ]


def probe_answers(answers: Path, tree: Path = ROOT) -> None:
    """Start the fake once (not under valgrind) and record what it answers to a submit and a
    status read, for the bare app to answer the same bytes (``bench_wrk.py``'s bare app)."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
        }
        command = _fake_command(port, Path(tmp) / "journal.jsonl")
        process = subprocess.Popen(
            command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            submit_code, submit_body = exchange(
                port, submit_request(SUBMIT_BODY.encode(), port), 60
            )
            job = json.loads(submit_body)["job_id"]
            status_code, status_body = exchange(port, status_request(f"/v1/jobs/{job}", port), 60)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
    if status_code != 200:
        raise RuntimeError(f"the fake answered a status read with {status_code}")
    answers.write_text(
        json.dumps(
            {
                "submit_code": submit_code,
                "submit_body": submit_body.decode(),
                "status_body": status_body.decode(),
            }
        )
    )


def measure(
    app: str,
    kind: str,
    count: int,
    valgrind: str,
    answers: Path,
    *,
    tree: Path = ROOT,
    request_ids: bool = False,
    keep: Path | None = None,
) -> Run:
    """One run of the ``app`` (bare or fake) server under callgrind: started, asked once
    whether it is up, one job submitted (the fake) and ``WARMUP`` + ``count`` requests of
    ``kind`` sent, then stopped with SIGTERM (the way ``bench_wrk.py`` stops it)."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        out = Path(tmp) / "callgrind.out"
        if app == "bare":
            command = [sys.executable, "-c", BARE, str(port), str(answers), "httptools", "uvloop"]
        else:
            command = _fake_command(port, Path(tmp) / "journal.jsonl", SERVE)
        env = dict(os.environ)
        env["PYTHONHASHSEED"] = "0"  # the same dict and set layouts in every run
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
        process = subprocess.Popen(
            [
                *(valgrind, "--tool=callgrind", "--separate-threads=yes"),
                *(f"--callgrind-out-file={out}", *command),
            ],
            cwd=tree,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            probe = "/__admin/health" if app == "fake" else "/v1/jobs/probe"
            code, _ = exchange(port, status_request(probe, port), READY_SECONDS)
            if code != 200:
                raise RuntimeError(f"{app}: GET {probe} answered {code}")
            job = "job_bench"
            if app == "fake":
                code, body = exchange(port, submit_request(SUBMIT_BODY.encode(), port), 60)
                if code != 202:
                    raise RuntimeError(f"the fake answered its first submit with {code}")
                job = json.loads(body)["job_id"]
            path = f"/v1/jobs/{job}"
            requests = requests_of(kind, path, port, request_ids=request_ids)
            codes = drive(port, requests, WARMUP + count)
            _, last = exchange(port, status_request(path, port), 60)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                _, stderr = process.communicate(timeout=RUN_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate(timeout=10)
                raise RuntimeError(f"{app} under valgrind did not stop") from None
        # (uvicorn.run, the bare server, ends by raising the signal again once it has stopped)
        if process.returncode not in (0, -signal.SIGTERM):
            raise RuntimeError(f"{app} exited with {process.returncode}: {stderr[-2000:]!r}")
        files = thread_files(out)
        if keep is not None:  # for callgrind_annotate, a file a thread (.t01: the main one)
            keep.mkdir(parents=True, exist_ok=True)
            for file in files:
                thread = file.name.rsplit("-", 1)[1]
                shutil.copy(file, keep / f"callgrind.{app}.{tree.name}.{kind}.{count}.t{thread}")
        texts = [file.read_text() for file in files]
        counts = [callgrind_total(text) for text in texts]
        libcrypto = callgrind_object_cost(texts[0], "libcrypto")
        return Run(sum(counts), counts[0], libcrypto, dict(codes), last)


def thread_files(out: Path) -> list[Path]:
    """The files callgrind wrote for ``--callgrind-out-file=out --separate-threads=yes``, one a
    thread, in its thread numbers' order (``out-01``, the main thread, first)."""
    files = [f for f in out.parent.glob(f"{out.name}-*") if f.name.rsplit("-", 1)[1].isdigit()]
    if not files:
        raise RuntimeError(f"callgrind wrote no {out.name}-NN files in {out.parent}")
    return sorted(files, key=lambda f: int(f.name.rsplit("-", 1)[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n1", type=int, default=500, help="requests in the short run")
    parser.add_argument("--n2", type=int, default=2500, help="requests in the long run")
    parser.add_argument(
        "--kinds", default="status", help=f"comma-separated subset of {', '.join(KINDS)}"
    )
    parser.add_argument(
        "--request-ids",
        action="store_true",
        help="every request with an X-Request-Id of its own (as bench_wrk.py --request-ids)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also measure the fakeprovider of another checkout (git worktree add DIR COMMIT)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep callgrind's output files in DIR (for callgrind_annotate)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if unknown := sorted(set(kinds) - set(KINDS)):
        parser.error(f"unknown kind(s): {', '.join(unknown)}")
    if args.n2 <= args.n1:
        parser.error(f"--n2 must be larger than --n1, got {args.n1} and {args.n2}")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("bench_server_instructions: needs valgrind (Debian: apt-get install valgrind)")
        return 2
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        answers = Path(tmp) / "answers.json"
        probe_answers(answers)
        cells: list[tuple[str, str, Path]] = [("bare", "bare", ROOT), ("fake", "fake", ROOT)]
        if args.baseline is not None:
            cells.append(("baseline", "fake", args.baseline.resolve()))
        for kind in kinds:
            row = results.setdefault(kind, {})
            for name, app, tree in cells:
                runs = [
                    measure(
                        app,
                        kind,
                        n,
                        valgrind,
                        answers,
                        tree=tree,
                        request_ids=args.request_ids,
                        keep=args.keep,
                    )
                    for n in (args.n1, args.n2)
                ]
                if kind == "status" and runs[0].last_body != runs[1].last_body:
                    # (elapsed_seconds aside, the job must be in the same state in both runs)
                    first, second = (json.loads(r.last_body).get("status") for r in runs)
                    if first != second:
                        raise RuntimeError(f"{name}: the job was {first}, then {second}")
                row[name] = round(
                    per_request(runs[0].instructions, runs[1].instructions, args.n1, args.n2)
                )
                main_thread = round(
                    per_request(runs[0].main_thread, runs[1].main_thread, args.n1, args.n2)
                )
                libcrypto = round(
                    per_request(runs[0].libcrypto, runs[1].libcrypto, args.n1, args.n2)
                )
                row[f"{name}_main_thread"] = main_thread
                row[f"{name}_libcrypto"] = libcrypto
                row[f"{name}_codes"] = runs[1].codes
                print(
                    f"{kind} {name}: {row[name]:,} instructions a request"
                    f" ({main_thread:,} in the main thread, {libcrypto:,} of them libcrypto's)",
                    file=sys.stderr,
                )
    head = "| request | bare Starlette server | fakeprovider server | of it libcrypto | x bare |"
    if args.baseline is not None:
        head += " baseline | this / baseline |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for kind, row in results.items():
        bare, fake = row["bare"], row["fake"]
        row["ratio"] = round(bare / fake, 3)
        libcrypto = row["fake_libcrypto"]
        line = f"| {kind} | {bare:,} | {fake:,} | {libcrypto:,} | {bare / fake:.2f} |"
        if args.baseline is not None:
            row["vs_baseline"] = round(fake / row["baseline"], 3)
            line += f" {row['baseline']:,} | {fake / row['baseline']:.2f} |"
        print(line)
    print(
        "(libcrypto: the submit body's SHA-256 digest, in the main thread; valgrind runs OpenSSL"
        " without the CPU's SHA instructions, a path that natively takes some 2.7x their CPU)"
    )
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
