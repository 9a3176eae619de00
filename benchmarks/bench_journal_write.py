"""CPU time of the journal's write side per request, this tree against another, alternated.

What every request pays for its journal entry, in process CPU time (``time.process_time_ns``,
so a busy machine slows the wall clock more than these), each stage over ``--entries`` entries:

- ``entry``: ``Entry(...)`` with the keywords ``Engine._entry`` passes for a status read;
- ``append+complete``: ``next_seq``, ``append`` and ``complete`` as a request and ``sent`` do
  them (no sink: the in-memory store only);
- ``line``: ``jsonl_line`` of a completed status-read entry (its times all different);
- ``lines``: the same entries encoded ``ENCODE_LINES`` (128) at a time, as ``BatchedSink``
  does (``jsonl_lines``; a tree without it joins ``jsonl_line``'s lines);
- ``journal``: ``append`` + ``complete`` through a ``BatchedSink`` writing to ``/dev/null``,
  its writer thread's CPU included (the sink is closed inside the timing);
- ``status read``: ``FakeProvider.receive`` + ``sent`` of a ``long-render`` status read with
  that sink, the whole request below the HTTP layer;
- ``receive``: the same without ``sent`` (so ``sent``, the row printed last, is ``status
  read`` minus ``receive``: what answering costs the journal, writer included).

With ``--baseline DIR`` (a checkout of the code to compare with, e.g. ``git worktree add
/tmp/base main``), each round runs the stages once in a child process on each tree, in turn
(the order reversed every other round), and prints the medians and the ratio per stage.

    python benchmarks/bench_journal_write.py --baseline /tmp/base [--rounds 5] [--entries 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def _per_entry(count: int, run: Callable[[int], None]) -> float:
    """CPU microseconds per entry of ``run(count)`` (best of three: the least disturbed)."""
    best = []
    for _ in range(3):
        start = time.process_time_ns()
        run(count)
        best.append((time.process_time_ns() - start) / count / 1000)
    return round(min(best), 3)


def _status_kwargs(seq: int, at: float) -> dict[str, Any]:
    # what Engine._entry passes for a status read of a processing job
    return {
        "seq": seq,
        "kind": "status",
        "job_id": "job_0123456789ab",
        "method": "GET",
        "path": "/v1/jobs/job_0123456789ab",
        "client": "127.0.0.1",
        "received_at": at,
        "status_code": 200,
        "job_status": "processing",
        "retry_after": None,
        "fault": None,
        "true_status": "processing",
        "status_since": 20.015645097999367,
        "poll_after": 30.0,
        "inline_result": None,
        "error_code": None,
        "credential": "fp:0123abcd",
        "idempotency_key": None,
        "request_digest": None,
        "dropped": None,
        "listed": None,
    }


def _times(count: int) -> list[float]:
    # clock readings as a monotonic clock gives them: every one different, all digits used
    return [123.45678901234567 + n * 0.00012345678912345 for n in range(count)]


def stages(count: int) -> dict[str, float]:
    """The per-entry CPU microseconds of each stage, on the tree this process imports."""
    from fakeprovider import entries
    from fakeprovider.entries import Entry, jsonl_line
    from fakeprovider.http import HttpRequest
    from fakeprovider.journal import BatchedSink, Journal
    from fakeprovider.provider import FakeProvider

    times = _times(count)
    kwargs = [_status_kwargs(n + 1, t) for n, t in enumerate(times)]

    def make(count: int) -> None:
        for kw in kwargs[:count]:
            Entry(**kw)

    made = [Entry(**kw) for kw in kwargs]

    def append_complete(count: int, sink: Any = None) -> None:
        journal = Journal(sink=sink)
        for entry, at in zip(made[:count], times, strict=False):
            journal.next_seq()
            journal.append(entry)
            journal.complete(
                entry.seq, response_started_at=at + 1e-5, completed_at=at + 2e-5, status_code=200
            )
        journal.close()

    completed = [
        Entry(**kw, response_started_at=t + 1e-5, completed_at=t + 2e-5)
        for kw, t in zip(kwargs, times, strict=True)
    ]

    def lines(count: int) -> None:
        for entry in completed[:count]:
            jsonl_line(entry)

    def many(batch: list[Any]) -> str:
        return "".join(map(jsonl_line, batch))

    write_many = getattr(entries, "jsonl_lines", many)

    def lines_at_once(count: int) -> None:
        for start in range(0, count, 128):
            write_many(completed[start : min(start + 128, count)])

    def batched(count: int) -> None:
        fresh = [Entry(**kw) for kw in kwargs[:count]]  # complete() fills entries in
        made[:count] = fresh
        with open(os.devnull, "w") as devnull:
            append_complete(count, BatchedSink(devnull))

    def status_reads(count: int, answer: bool = True) -> None:
        with open(os.devnull, "w") as devnull:
            provider = FakeProvider("long-render", journal_sink=BatchedSink(devnull))
            submit = HttpRequest(
                method="POST",
                path="/v1/jobs",
                query={},
                headers={"content-type": "application/json"},
                body=b'{"prompt": "a cat"}',
                peer="127.0.0.1:5000",
                base_url="http://127.0.0.1:8000",
                too_large=None,
            )
            reply, _ = provider.receive(submit)
            provider.sent(reply, started=0.0, completed=0.0, status_code=202)
            job = provider.journal.last.job_id
            read = HttpRequest(
                method="GET",
                path=f"/v1/jobs/{job}",
                query={},
                headers={},
                body=b"",
                peer="127.0.0.1:5000",
                base_url="http://127.0.0.1:8000",
                too_large=None,
            )
            clock = provider.clock
            for _ in range(count):
                reply, _ = provider.receive(read)
                if answer:
                    provider.sent(
                        reply, started=clock.now(), completed=clock.now(), status_code=200
                    )
                else:  # the two clock readings all the same
                    clock.now()
                    clock.now()
            provider.journal.close()

    out = {
        "entry": _per_entry(count, make),
        "append+complete": _per_entry(count, lambda n: append_complete(n)),
        "line": _per_entry(count, lines),
        "lines": _per_entry(count, lines_at_once),
        "journal": _per_entry(count, batched),
        "status read": _per_entry(count, status_reads),
        "receive": _per_entry(count, lambda n: status_reads(n, answer=False)),
    }
    out["sent"] = round(out["status read"] - out["receive"], 3)
    return out


def _child(tree: Path, count: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{HERE / 'benchmarks'}"}
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--entries", str(count)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not 1000 <= args.entries <= 200_000:
        parser.error("--entries: expected 1000 to 200000")
    if not 1 <= args.rounds <= 20:
        parser.error("--rounds: expected 1 to 20")
    if args.child:
        print(json.dumps(stages(args.entries)))
        return 0
    trees = {"this": HERE}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
        for name in order:
            runs[name].append(_child(trees[name], args.entries))
            print(f"round {round_ + 1} {name}: {runs[name][-1]}", file=sys.stderr)
    medians = {
        name: {stage: statistics.median(r[stage] for r in done) for stage in done[0]}
        for name, done in runs.items()
    }
    print("| stage, CPU us per request | " + " | ".join(trees) + " | ratio |")
    print("|---|" + "---|" * (len(trees) + 1))
    for stage in medians["this"]:
        cells = [f"{medians[name][stage]:.2f}" for name in trees]
        ratio = (
            f"{medians['this'][stage] / medians['baseline'][stage]:.2f}"
            if "baseline" in trees
            else ""
        )
        print(f"| {stage} | " + " | ".join(cells) + f" | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
