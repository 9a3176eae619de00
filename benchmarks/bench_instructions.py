"""Instructions per status read and submit, fakeprovider's ASGI app against bare Starlette.

Wall-clock and even CPU-time numbers swing by 30% on a shared or virtual machine; the number of
instructions a request executes does not (about 1% from run to run). Each app runs in a child
process under valgrind's callgrind, once with N1 and once with N2 requests after the same
warm-up; the difference divided by N2 - N1 is the cost of one request, start-up and warm-up
cancelled out. The bare app is ``bench_wrk.py``'s: Starlette routing to handlers that answer,
as fixed bytes, exactly what the fake answered (same body, status code and media type).
User-space instructions only: the kernel's part (sockets) is not counted, nor is uvicorn's (the
apps are called directly, as in ``bench_asgi_overhead.py``). On the real server uvicorn and
uvloop add about the same to every app, so the ratio of (ours + uvicorn) to (bare + uvicorn) is
what wrk's throughput ratio follows.

Needs ``valgrind`` (Debian: ``apt-get install valgrind``); a run takes a few minutes.

    python benchmarks/bench_instructions.py [--n1 300] [--n2 1300] [--json] [--baseline DIR]
        [--request-ids]

``--request-ids``: every request carries an ``X-Request-Id`` of its own (as ``bench_wrk.py
--request-ids``'s do), so nothing kept by a request's headers can flatter the fake.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: What is measured: (request kind, app).
CELLS = (("status", "bare"), ("status", "fake"), ("submit", "bare"), ("submit", "fake"))
WARMUP = 200
#: Submit bodies made before either run (the same number in both, so their cost cancels; 20,000
#: took most of a child's time under valgrind).
BODIES = 2_000


def callgrind_total(text: str) -> int:
    """The instructions a callgrind output file counted (its ``summary:`` or ``totals:`` line)."""
    for line in text.splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise ValueError("no 'summary:' or 'totals:' line in the callgrind output")


def callgrind_object_cost(text: str, fragment: str) -> int:
    """The instructions a callgrind output file counted in the code of the shared objects whose
    path holds ``fragment`` (their own code, not what they called), e.g. ``libcrypto``: valgrind
    runs code without the CPU's SHA instructions, so OpenSSL's SHA-256 there takes its slower
    path (natively some 2x the CPU time: 3.5 against 1.6 us for a 1.5 kB body)."""
    names: dict[str, str] = {}
    current = ""
    after_call = False
    total = 0
    for line in text.splitlines():
        head = line[:1]
        if head.isdigit() or head in ("+", "-", "*"):
            if after_call:  # the cost of a call: counted where it was spent
                after_call = False
            elif fragment in current:
                parts = line.split()
                total += int(parts[1]) if len(parts) > 1 else 0
        elif line.startswith(("ob=", "cob=")):
            key, _, name = line.split("=", 1)[1].partition(" ")
            if name:
                names[key] = name
            if line.startswith("ob="):
                current = names.get(key, key) if key.startswith("(") else key
        elif line.startswith("calls="):
            after_call = True
    return total


def per_request(total_n1: int, total_n2: int, n1: int, n2: int) -> float:
    """Instructions per request from two runs of ``n1`` and ``n2`` requests."""
    if n2 <= n1:
        raise ValueError(f"n2 must be larger than n1, got n1={n1}, n2={n2}")
    return (total_n2 - total_n1) / (n2 - n1)


def _bare_app(status_body: bytes, submit_body: bytes, submit_code: int) -> Any:
    """``bench_wrk.py``'s bare app: Starlette answering fixed bytes."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def status(request: Request) -> Response:
        return Response(status_body, media_type="application/json")

    async def submit(request: Request) -> Response:
        await request.body()
        return Response(submit_body, status_code=submit_code, media_type="application/json")

    return Starlette(
        routes=[Route("/v1/jobs/{job_id}", status), Route("/v1/jobs", submit, methods=["POST"])]
    )


WORDS = (b"a", b"cat", b"riding", b"a", b"bicycle", b"through", b"neon", b"rain", b"at", b"dusk")


def _prompt(n: int) -> bytes:
    """Submit ``n``'s body: a prompt of its own and of its own length (1 to 601 words after
    "bench N", as bench_wrk.py's), as real clients' are."""
    said = b" ".join(WORDS[(n + i) % len(WORDS)] for i in range(1, 2 + (n * 7919) % 601))
    return b'{"prompt": "bench %d %s"}' % (n, said)


def _with_length(scope: dict[str, Any], length: int) -> dict[str, Any]:
    """``scope`` with the ``content-length`` field uvicorn puts in a submit's headers."""
    return {**scope, "headers": [*scope["headers"], (b"content-length", b"%d" % length)]}


async def _child(kind: str, app_name: str, count: int, request_ids: bool = False) -> None:
    from _asgi import answer, call
    from bench_asgi_overhead import SUBMIT, _scope

    from fakeprovider.app import create_app
    from fakeprovider.clock import RealClock
    from fakeprovider.journal import BatchedSink
    from fakeprovider.provider import FakeProvider
    from fakeprovider.server import SERVING_GC_THRESHOLD

    with tempfile.TemporaryDirectory() as tmp:
        # The writer thread wakes only when its lines pile up (``BATCH_LINES``) or at close: its
        # usual 50 ms wakeups, a minute of them under valgrind, added some 20,000 instructions
        # of noise a submit. The lines are encoded as the server's are (the caller does that)
        # and written at close, in both runs alike.
        sink = BatchedSink((Path(tmp) / "journal.jsonl").open("w", encoding="utf-8"), interval=60)
        # A clock that does not move: under valgrind a run lasts a minute, and a job that moved
        # on part-way (long-render's first step is at 20 s) would make the two runs read
        # different states. wrk's reads, 11 s from the submit, all find the job queued too.
        frozen = RealClock(monotonic=itertools.repeat(1000.0).__next__)
        app = create_app(FakeProvider("long-render", journal_sink=sink, clock=frozen))
        submit = _scope("POST", "/v1/jobs", body=True)
        submit_code, submit_body = await answer(app, submit, SUBMIT)
        status = _scope("GET", f"/v1/jobs/{json.loads(submit_body)['job_id']}")
        if app_name == "bare":
            app = _bare_app((await answer(app, status))[1], submit_body, submit_code)
        # each submit a prompt of its own and of its own length (``_prompt``), as a real
        # client's and bench_wrk.py's: nothing kept by the bytes or the length may flatter it;
        # and its scope the Content-Length field uvicorn gives (``_with_length``). The bodies
        # and scopes are made before either run, as many in both (their cost cancels).
        if kind == "submit":
            bodies = [_prompt(n) for n in range(BODIES)]
            requests = iter([(_with_length(submit, len(body)), body) for body in bodies])
        else:
            requests = itertools.repeat((status, b""))
        if request_ids:  # each request a scope of its own, made before either run too
            requests = iter(
                [
                    (
                        {**scope, "headers": [*scope["headers"], (b"x-request-id", b"req-%d" % n)]},
                        body,
                    )
                    for n, (scope, body) in zip(range(BODIES), requests, strict=False)
                ]
            )
        for _ in range(WARMUP):
            await call(app, *next(requests))
        # what the warm-up made stays out of the collector's way: whether a full collection,
        # which visits every object, fell in one run and not the other swung the difference
        # by up to 7,000 instructions a request
        gc.collect()
        gc.freeze()
        if app_name == "fake":
            # what ``fakeprovider serve`` collects by (bench_wrk.py's fake server); the bare app
            # runs as bench_wrk.py's bare server does, with the interpreter's thresholds
            gc.set_threshold(*SERVING_GC_THRESHOLD)
        for _ in range(count):
            await call(app, *next(requests))
        sink.close()


def _measure(
    kind: str,
    app: str,
    count: int,
    valgrind: str,
    tree: Path | None = None,
    request_ids: bool = False,
) -> tuple[int, int]:
    """The instructions of a child run, and of them those in libcrypto's own code."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = [
            valgrind,
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            kind,
            app,
            str(count),
            *(["--request-ids"] if request_ids else []),
        ]
        env = dict(os.environ)
        env.setdefault("PYTHONHASHSEED", "0")  # the same dict and set layouts in every run
        if tree is not None:  # that checkout's fakeprovider, this script
            env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=900, check=False, env=env
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        text = out.read_text()
        return callgrind_total(text), callgrind_object_cost(text, "libcrypto")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n1", type=int, default=300, help="requests in the short run")
    parser.add_argument("--n2", type=int, default=1300, help="requests in the long run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also measure the fakeprovider of another checkout (git worktree add DIR COMMIT)",
    )
    parser.add_argument(
        "--request-ids",
        action="store_true",
        help="every request with an X-Request-Id of its own (as bench_wrk.py --request-ids)",
    )
    parser.add_argument("--child", nargs=3, metavar=("KIND", "APP", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, app, count = args.child
        asyncio.run(_child(kind, app, int(count), args.request_ids))
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("bench_instructions: needs valgrind (Debian: apt-get install valgrind)")
        return 2
    if args.n2 <= args.n1:
        parser.error(f"--n2 must be larger than --n1, got {args.n1} and {args.n2}")
    if args.n2 > BODIES - WARMUP:
        parser.error(f"--n2 must be at most {BODIES - WARMUP:,}, got {args.n2}")
    results: dict[str, Any] = {}
    cells = [(kind, app, None) for kind, app in CELLS]
    if args.baseline is not None:
        cells += [(kind, "baseline", args.baseline) for kind in ("status", "submit")]
    for kind, app, tree in cells:
        child_app = "fake" if app == "baseline" else app
        runs = [
            _measure(kind, child_app, n, valgrind, tree, args.request_ids)
            for n in (args.n1, args.n2)
        ]
        row = results.setdefault(kind, {})
        row[app] = round(per_request(runs[0][0], runs[1][0], args.n1, args.n2))
        row[f"{app}_libcrypto"] = round(per_request(runs[0][1], runs[1][1], args.n1, args.n2))
    head = "| request | bare Starlette | fakeprovider | of it libcrypto | x bare |"
    if args.baseline is not None:
        head += " baseline | this / baseline |"
    print(head)
    print("|---" * head.count(" | ") + "|---|")
    for kind in ("status", "submit"):
        row = results[kind]
        bare, fake = row["bare"], row["fake"]
        row["ratio"] = round(bare / fake, 3)
        line = f"| {kind} | {bare:,} | {fake:,} | {row['fake_libcrypto']:,} | {bare / fake:.2f} |"
        if args.baseline is not None:
            row["vs_baseline"] = round(fake / row["baseline"], 3)
            line += f" {row['baseline']:,} | {fake / row['baseline']:.2f} |"
        print(line)
    print(
        "(libcrypto: the body's SHA-256 digest, which valgrind runs without the CPU's SHA "
        "instructions: OpenSSL's slower path, some 2x the CPU it takes on a CPU that has them)"
    )
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    raise SystemExit(main())
