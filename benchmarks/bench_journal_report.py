"""What a report costs under ``--journal-memory``: ``Journal.run_entries()`` reading the current
run back from the journal file, from where the run starts (seek) against the whole file (the
fallback, which was the only way before), alternated in every round, CPU time, medians.

Builds a file as ``serve --journal FILE --journal-memory M`` writes it (a ``BatchedSink``, run
headers, requests in flight across each reset) with ``--runs`` runs of ``--lines`` lines in all, then times ``run_entries()`` and
``run_entries()`` plus ``check()`` (what ``/__admin/report`` does) both ways. Two shapes: runs of
equal length (the current run is ``lines / runs``), and a short current run after long ones.

    python benchmarks/bench_journal_report.py [--lines 200000] [--runs 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakeprovider.invariants import Limits, check
from fakeprovider.journal import BatchedSink, Entry, Journal


def _entry(seq: int, at: float) -> Entry:
    return Entry(
        seq=seq,
        kind="status",
        job_id="job_0123456789",
        method="GET",
        path="/v1/jobs/job_0123456789",
        client="bench",
        received_at=at,
        job_status="processing",
        true_status="processing",
        status_since=0.5,
        poll_after=5.0,
        credential="fp:0123abcd",
    )


def _header(seq: int, at: float) -> Entry:
    return Entry(
        seq=seq,
        kind="admin",
        job_id=None,
        method="RUN",
        path="/__admin/start" if seq == 0 else "/__admin/reset",
        client="fakeprovider",
        received_at=at,
        response_started_at=at,
        completed_at=at,
        run={"scenario": "bench"},
    )


def build(path: Path, run_lines: list[int], memory: int) -> Journal:
    """A bounded journal whose file holds runs of ``run_lines`` lines each; the last run is the
    current one (the sink left open)."""
    stream = path.open("a", encoding="utf-8")  # closed by the caller (journal.sink.stream)
    journal = Journal(memory=memory)
    journal.start_run(_header(0, 0.0))
    journal.attach(BatchedSink(stream))
    held: int | None = None
    for number, lines in enumerate(run_lines):
        if number:
            journal.clear()
            journal.start_run(_header(journal.next_seq(), 0.0))
        if held is not None:
            journal.complete(held, completed_at=0.0, status_code=200)  # in flight across it
        for _ in range(lines - 1):
            seq = journal.next_seq()
            at = seq * 0.001
            journal.append(_entry(seq, at))
            journal.complete(seq, response_started_at=at, completed_at=at, status_code=200)
        held = journal.next_seq()
        journal.append(_entry(held, held * 0.001))
    journal.flush()
    return journal


def _cpu(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time_ns()
    out = call()
    return (time.process_time_ns() - start) / 1e9, out


def measure(journal: Journal, rounds: int, with_check: bool) -> dict[str, float]:
    mark = journal._run_mark

    def seek() -> list[Entry]:
        return journal.run_entries()

    def whole() -> list[Entry]:
        journal._run_mark = None
        try:
            return journal.run_entries()
        finally:
            journal._run_mark = mark

    def report(read: Callable[[], list[Entry]]) -> Callable[[], Any]:
        return lambda: check(read(), Limits()).to_dict()

    ways = {"seek": seek, "whole": whole}
    if with_check:
        ways = {name: report(read) for name, read in ways.items()}
    times: dict[str, list[float]] = {name: [] for name in ways}
    results: dict[str, Any] = {}
    for _ in range(rounds):
        for name, way in ways.items():
            took, results[name] = _cpu(way)
            times[name].append(took)
    if results["seek"] != results["whole"]:
        raise SystemExit("the two ways read different entries")
    out = {f"{name}_cpu_s": round(statistics.median(t), 4) for name, t in times.items()}
    out["whole_over_seek"] = round(out["whole_cpu_s"] / out["seek_cpu_s"], 1)
    if not with_check:
        out["entries"] = len(results["seek"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000, help="lines in the file, all runs")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", type=int, default=100, help="--journal-memory")
    parser.add_argument("--short", type=int, default=1000, help="the short current run's lines")
    parser.add_argument("--no-check", action="store_true", help="time run_entries() alone")
    args = parser.parse_args(argv)
    if not 1 <= args.lines <= 2_000_000 or not 1 <= args.runs <= 100 or args.rounds > 20:
        parser.error("--lines up to 2,000,000, --runs up to 100, --rounds up to 20")
    equal = [args.lines // args.runs] * args.runs
    shapes = {
        f"{args.runs} runs of {equal[0]:,}": equal,
        f"{args.lines - args.short:,} lines, then a run of {args.short:,}": [
            args.lines - args.short,
            args.short,
        ],
    }
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    table: dict[str, Any] = {}
    for label, runs in shapes.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "journal.jsonl"
            journal = build(path, runs, args.memory)
            try:
                row: dict[str, Any] = {"file_mb": round(path.stat().st_size / 1e6, 1)}
                row["read"] = measure(journal, args.rounds, with_check=False)
                if not args.no_check:
                    row["report"] = measure(journal, args.rounds, with_check=True)
            finally:
                journal.close()
                stream = getattr(journal.sink, "stream", None)
                if stream is not None:
                    stream.close()
        table[label] = row
        print(label, json.dumps(row), file=sys.stderr)
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    print(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
