"""How ``check`` scales with the journal: time per entry at N and at 10 N entries, same run.

Every client shape the checker must stay linear on (issue 14), each built at N and at 10 N
entries and judged with every rule switched on (deadline and status_rate included), the report
rendered; then the largest journals once more through ``fakeprovider check`` (JSONL read,
parsed, judged and printed, in process, output discarded). For each shape the script prints the
time per entry at N and at 10 N and their ratio: 1.0 is linear, 10 would be quadratic.

Shapes:

- ``tight-poller``: one job read back to back (every other read overlapping the one before,
  a poll hint on each answer, reads after the job ended): what no_overlap, honours_poll_after
  and stops_at_terminal compare with each other.
- ``resubmitter``: one client submitting the same request body again and again, each job
  shown done and read once more (no_resubmission).
- ``many-jobs``: thousands of jobs of one client, interleaved, each with a 503 + Retry-After
  answered late, webhooks and a download (honours_retry_after's job scope, webhook lookups).
- ``many-clients``: thousands of clients with a job each, webhooks for every job (per-client
  work must not scan the run's webhooks).
- ``retry-storm``: one job whose reads fail with 503 + Retry-After for ever, with a 429 for
  the account every so often, under a raised max_retries.
- ``auth-churn``: every request with its own credential, each refused with 401 (the scan for a
  retry with the same credential).

    python benchmarks/bench_check_scaling.py [--entries 10000] [--rounds 3] [--max-seconds 120]
    python benchmarks/bench_check_scaling.py --cli-only --cli-entries 1000000   # the 1M mode
    python benchmarks/bench_check_scaling.py --read-only [--entries 20000]    # reading alone

The contract (issue 14): 100,000 entries of any shape checked in under 3 s. Issue 15: a
1,000,000-entry journal checked in under 5 s with bounded memory. With ``--cli-entries M``
(or ``--cli-only``, which skips the in-process part) each shape is written at M entries as
the fake writes it (compact JSON lines, every field) and judged by ``fakeprovider check`` in
a child process: its wall time, CPU time and peak RSS (``ru_maxrss``) are printed, with the
load average before and after (a busy machine inflates wall time, far less CPU time), and
the CPU time of a baseline measured on the same file just before: reading it a line at a time
with ``json.loads`` (``x json.loads``: the check's CPU time over the baseline's; a machine
half as fast doubles both, not their ratio).
The package's bytecode is cached as an installed package's is (a first check on a small
journal writes it), even where ``PYTHONDONTWRITEBYTECODE`` is set: else every check would
compile the package first, some 0.3 s.

``--read-only`` times turning one line into an ``Entry``, CPU time per line, each way the
reader has (alternated, median of the rounds): json.loads then the field-by-field checks
(the reader before msgspec), json.loads then the per-shape plan (where msgspec is missing),
``iter_entries`` a line at a time (msgspec for the fake's lines; strings shared, and not),
``iter_journal`` over the lines' bytes (read in blocks, the entries dropped as they come;
``blocks shared``: as ``read_journal`` reads), ``iter_records`` (the same blocks, each line
given as the struct msgspec decoded it into: what ``check`` streams a file with), and
json.loads / msgspec's decoding alone.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fakeprovider import entries as _entries
from fakeprovider.cli import main as cli_main
from fakeprovider.invariants import Limits, check
from fakeprovider.journal import Entry, RetryAfterRecord, iter_journal, iter_records, paused_gc

LIMITS = Limits(deadline=3600.0, status_rate=1000.0, max_retries=5)


def _entry(seq: int, kind: str, job: str | None, at: float, **extra: object) -> Entry:
    took = float(extra.pop("took", 0.01))  # type: ignore[arg-type]
    path = "/v1/jobs" if kind == "submit" else f"/v1/jobs/{job}"
    if kind == "content":
        path += "/content"
    values: dict[str, object] = {
        "method": "POST" if kind in ("submit", "webhook") else "GET",
        "path": path,
        "client": "c",
        "received_at": at,
        "response_started_at": at + took,
        "completed_at": at + took,
        "status_code": 200,
        **extra,
    }
    return Entry(seq=seq, kind=kind, job_id=job, **values)  # type: ignore[arg-type]


def tight_poller(n: int) -> list[Entry]:
    out = [_entry(1, "submit", "j_1", 0.0, status_code=202, job_status="queued", poll_after=1.0)]
    at = 0.0
    for seq in range(2, n + 1):
        # pairs: a read, then one sent before it answered (an overlap), both too soon
        at += 0.001 if seq % 2 else 0.05
        status = "succeeded" if seq > n * 0.9 else "processing"
        out.append(_entry(seq, "status", "j_1", at, took=0.02, job_status=status, poll_after=1.0))
    return out


def resubmitter(n: int) -> list[Entry]:
    out = []
    for k in range(1, n // 2 + 1):
        job = f"j_{k}"
        out.append(
            _entry(
                2 * k - 1, "submit", job, float(k), job_status="succeeded", request_digest="same"
            )
        )
        out.append(_entry(2 * k, "status", job, k + 0.5, job_status="succeeded"))
    return out


def blind_resubmitter(n: int) -> list[Entry]:
    """The same request submitted over and over, no job ever read: every submit leaves one
    more job open for ``no_resubmission`` to look at (a load generator's POST loop)."""
    return [
        _entry(
            k,
            "submit",
            f"j_{k}",
            k * 0.01,
            status_code=202,
            job_status="queued",
            request_digest="same",
        )
        for k in range(1, n + 1)
    ]


def many_jobs(n: int) -> list[Entry]:
    jobs = max(1, n // 6)
    out: list[Entry] = []
    seq = 0

    def add(kind: str, job: str, at: float, **extra: object) -> None:
        nonlocal seq
        seq += 1
        out.append(_entry(seq, kind, job, at, **extra))

    for k in range(jobs):  # every job submitted first, then each phase for every job
        add(
            "submit",
            f"j_{k}",
            k * 0.01,
            status_code=202,
            job_status="queued",
            request_digest=str(k),
        )
    for k in range(jobs):
        ra = RetryAfterRecord(raw="30", not_before=100.0 + k * 0.01 + 30)
        add("status", f"j_{k}", 100.0 + k * 0.01, status_code=503, retry_after=ra)
    for k in range(jobs):
        add("status", f"j_{k}", 200.0 + k * 0.01, job_status="succeeded")
    for k in range(jobs):
        add(
            "webhook",
            f"j_{k}",
            150.0 + k * 0.01,
            client="127.0.0.1:9",
            path="/hook",
            event="job.succeeded",
            attempt=1,
        )
    for k in range(jobs):
        add("content", f"j_{k}", 300.0 + k * 0.01)
    for k in range(n - seq):
        add("list", None, 400.0 + k, listed={})  # type: ignore[arg-type]
    return out


def many_clients(n: int) -> list[Entry]:
    clients = max(1, n // 4)
    out: list[Entry] = []
    seq = 0
    for k in range(clients):
        job, client = f"j_{k}", f"client-{k}"
        for kind, at, extra in (
            ("submit", 0.0, {"status_code": 202, "job_status": "queued"}),
            ("status", 10.0, {"job_status": "succeeded"}),
            ("content", 20.0, {}),
        ):
            seq += 1
            out.append(_entry(seq, kind, job, at + k * 0.001, client=client, **extra))
        seq += 1
        out.append(
            _entry(
                seq,
                "webhook",
                job,
                15.0 + k * 0.001,
                client="127.0.0.1:9",
                path="/hook",
                event="job.succeeded",
                attempt=1,
            )
        )
    return out


def retry_storm(n: int) -> list[Entry]:
    out = [_entry(1, "submit", "j_1", 0.0, status_code=202, job_status="queued")]
    for seq in range(2, n + 1):
        at = seq * 1.0
        code = 429 if seq % 10 == 0 else 503
        ra = RetryAfterRecord(raw="1", not_before=at + 1.0)
        out.append(_entry(seq, "status", "j_1", at, status_code=code, retry_after=ra))
    return out


def auth_churn(n: int) -> list[Entry]:
    return [
        _entry(seq, "status", f"j_{seq % 50}", seq * 0.1, status_code=401, credential=f"k{seq}")
        for seq in range(1, n + 1)
    ]


SHAPES: dict[str, Callable[[int], list[Entry]]] = {
    "tight-poller": tight_poller,
    "resubmitter": resubmitter,
    "blind-resubmitter": blind_resubmitter,
    "many-jobs": many_jobs,
    "many-clients": many_clients,
    "retry-storm": retry_storm,
    "auth-churn": auth_churn,
}


def _median(run: Callable[[], object], rounds: int, stop: float) -> float:
    times: list[float] = []
    for _ in range(rounds):
        if times and time.monotonic() > stop:
            break
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _cli(path: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        cli_main(["check", str(path), *CHECK_OPTIONS])


CHECK_OPTIONS = ("--deadline", "1h", "--status-rate", "1000")


def write_journal(path: Path, entries: list[Entry]) -> int:
    """``entries`` as the fake writes them (one compact JSON object per line); the bytes."""
    with path.open("w", encoding="utf-8") as out:
        for e in entries:
            out.write(json.dumps(e.to_dict(), separators=(",", ":")) + "\n")
    return path.stat().st_size


#: The baseline of the same run: the journal read a line at a time with ``json.loads``, each
#: object dropped (what any reader of the file pays at least, before judging anything).
JSON_LOADS = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n    json.loads(line)"


#: Starts each command it is sent (a JSON line: the command and its environment) and answers
#: a JSON line: wall seconds, CPU seconds, peak RSS in bytes and the exit status. It runs in a
#: small process of its own, started before any journal is built (``_launcher``): a child
#: started from this script itself would report this script's peak RSS as its own (Linux
#: keeps a process's peak across the fork, or vfork, and the exec), and this script holds a
#: million entries when it starts a check.
LAUNCHER = """
import json, os, subprocess, sys, time
for line in sys.stdin:
    command, env = json.loads(line)
    start = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    code = os.waitstatus_to_exitcode(status)
    print(json.dumps([wall, cpu, usage.ru_maxrss * 1024, code]), flush=True)
"""
_launched: list[subprocess.Popen[str]] = []


def _launcher() -> subprocess.Popen[str]:
    """The process that starts ``cli_in_child``'s commands (``LAUNCHER``), started at the first
    call: ``main`` calls this before it builds anything."""
    if not _launched:
        _launched.append(
            subprocess.Popen(
                [sys.executable, "-c", LAUNCHER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
        atexit.register(_stop_launcher)
    return _launched[0]


def _stop_launcher() -> None:
    """End the launcher (its input closed, it returns) and close its pipes."""
    for launcher in _launched:
        if launcher.stdin is not None:
            launcher.stdin.close()
        launcher.wait(timeout=30)
        if launcher.stdout is not None:
            launcher.stdout.close()
    _launched.clear()


def cli_in_child(path: Path, command: list[str] | None = None) -> tuple[float, float, int, int]:
    """``fakeprovider check PATH`` (or ``command``) in a child process: wall seconds, CPU
    seconds (user + system), peak RSS in bytes and the exit status."""
    if command is None:
        command = [sys.executable, "-m", "fakeprovider", "check", str(path), *CHECK_OPTIONS]
    # as installed: the package's bytecode cached (``cli_table`` warms it), even where the
    # environment says not to write it (which makes every run compile the package anew)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    launcher = _launcher()
    assert launcher.stdin is not None
    assert launcher.stdout is not None
    launcher.stdin.write(json.dumps([command, env]) + "\n")
    launcher.stdin.flush()
    wall, cpu, rss, code = json.loads(launcher.stdout.readline())
    return float(wall), float(cpu), int(rss), int(code)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cli_table(shapes: list[str], entries: int, stop: float) -> None:
    """Each shape at ``entries`` entries through ``fakeprovider check`` in a child process,
    after the baseline (``JSON_LOADS``) on the same file: the last column is the check's CPU
    time over the baseline's, which a faster or slower machine moves far less than either."""
    print(f"'fakeprovider check' in a child process, {entries:,} entries per journal")
    print(f"load average before: {_load()}")
    print(
        f"{'shape':<14} {'MB':>6} {'wall s':>7} {'cpu s':>6} {'us/entry':>8} {'peak RSS':>9} exit"
        f" {'json.loads cpu s':>16} {'x json.loads':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.jsonl"  # a first check writes the bytecode the others use
        write_journal(warm, SHAPES[shapes[0]](12))
        cli_in_child(warm)
        for name in shapes:
            path = Path(tmp) / f"{name}.jsonl"
            built = SHAPES[name](entries)
            size = write_journal(path, built)
            del built
            base = cli_in_child(path, [sys.executable, "-c", JSON_LOADS, str(path)])[1]
            wall, cpu, rss, status = cli_in_child(path)
            path.unlink()
            print(
                f"{name:<14} {size / 1e6:>6.0f} {wall:>7.2f} {cpu:>6.2f}"
                f" {cpu / entries * 1e6:>8.2f} {rss / 2**20:>6.0f} MB {status:>4}"
                f" {base:>16.2f} {cpu / base:>12.2f}",
                flush=True,
            )
            if time.monotonic() > stop:
                print("stopped: --max-seconds reached", file=sys.stderr)
                break
    print(f"load average after: {_load()}")


def read_table(shapes: list[str], n: int, rounds: int, stop: float) -> None:
    """CPU time per line of each way of reading a line, alternated, medians of ``rounds``."""
    decode = _entries._line_decoder()

    def careful(lines: list[bytes]) -> None:
        strings: dict[str, str] = {}
        for line in lines:  # what iter_entries did before msgspec and the plans
            _entries._entry(json.loads(line.decode()), strings)

    def planned(lines: list[bytes]) -> None:
        strings: dict[str, str] = {}
        for line in lines:
            data = json.loads(line.decode())
            _entries._fast_entry(data, strings) or _entries._entry(data, strings)

    def blocks(lines: list[bytes], share_strings: bool = False) -> None:
        # what check reads a file with: the bytes in blocks, the entries dropped as they come
        data = io.BytesIO(b"".join(lines))
        for _ in iter_journal(data, share_strings=share_strings):
            pass

    def records(lines: list[bytes]) -> None:
        # what check reads a file with since issue 15's second pass: the decoded structs
        for _ in iter_records(io.BytesIO(b"".join(lines))):
            pass

    ways: dict[str, Callable[[list[bytes]], object]] = {
        "json+checks": careful,
        "json+plan": planned,
        "iter_entries": lambda lines: list(_entries.iter_entries(lines, "bench")),
        "not shared": lambda lines: list(
            _entries.iter_entries(lines, "bench", share_strings=False)
        ),
        "iter_journal": blocks,
        "blocks shared": lambda lines: blocks(lines, share_strings=True),
        "iter_records": records,
        "json.loads": lambda lines: [json.loads(line.decode()) for line in lines],
    }
    if decode is not None:
        ways["msgspec"] = lambda lines: list(map(decode, lines))
    print(f"reading {n:,} lines per shape, CPU us per line (median of {rounds}, alternated)")
    print(f"load average before: {_load()}")
    print(f"{'shape':<14} {'B/line':>6} " + " ".join(f"{way:>12}" for way in ways) + "  ratio")
    for name in shapes:
        lines = [_entries.jsonl_line(e).encode() for e in SHAPES[name](n)]
        times: dict[str, list[float]] = {way: [] for way in ways}
        for _ in range(rounds):
            for way, read in ways.items():
                start = time.process_time_ns()
                read(lines)
                times[way].append((time.process_time_ns() - start) / len(lines) / 1000)
        us = {way: statistics.median(values) for way, values in times.items()}
        size = sum(map(len, lines)) / len(lines)
        print(
            f"{name:<14} {size:>6.0f} "
            + " ".join(f"{us[way]:>12.2f}" for way in ways)
            + f"  {us['iter_records'] / us['not shared']:.2f}",
            flush=True,
        )
        if time.monotonic() > stop:
            print("stopped: --max-seconds reached", file=sys.stderr)
            break
    print(f"load average after: {_load()}")
    print("ratio: iter_records (blocks, structs) / not shared (Entry objects, a line at a time)")


def main() -> None:
    _launcher()  # while this process is small (see ``LAUNCHER``)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000, help="N (default 10,000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append")
    parser.add_argument(
        "--cli-entries",
        type=int,
        default=None,
        metavar="M",
        help="also judge each shape at M entries with 'fakeprovider check' in a child process"
        " (wall, CPU, peak RSS); 1000000 is the issue-15 target",
    )
    parser.add_argument(
        "--cli-only", action="store_true", help="only the child-process table (M: 1,000,000)"
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="only the CPU time per line of reading a journal, each way the reader has",
    )
    args = parser.parse_args()
    stop = time.monotonic() + args.max_seconds
    shapes = args.shape or list(SHAPES)
    if args.read_only:
        with paused_gc():  # as read_journal reads
            read_table(shapes, args.entries, args.rounds, stop)
        return
    if not args.cli_only:
        scaling(shapes, args.entries, args.rounds, stop)
    if args.cli_only or args.cli_entries is not None:
        cli_table(shapes, args.cli_entries or 1_000_000, stop)


def scaling(shapes: list[str], n: int, rounds: int, stop: float) -> None:
    """Time per entry at N and 10 N in process, and the CLI at 10 N (issue 14)."""
    print(
        f"{'shape':<14} {'N':>8} {'us/entry':>9} {'10N':>8} {'us/entry':>9} {'ratio':>6}  cli 10N"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in shapes:
            build = SHAPES[name]
            small, large = build(n), build(10 * n)
            t_small = _median(lambda e=small: check(e, LIMITS).render(), rounds, stop)
            t_large = _median(lambda e=large: check(e, LIMITS).render(), rounds, stop)
            path = Path(tmp) / f"{name}.jsonl"
            write_journal(path, large)
            t_cli = _median(lambda p=path: _cli(p), 1, stop)
            ratio = (t_large / len(large)) / (t_small / len(small))
            worst = max(worst, t_cli)
            print(
                f"{name:<14} {len(small):>8} {t_small / len(small) * 1e6:>9.1f}"
                f" {len(large):>8} {t_large / len(large) * 1e6:>9.1f} {ratio:>6.2f}"
                f"  {t_cli:6.2f} s",
                flush=True,
            )
            if time.monotonic() > stop:
                print("stopped: --max-seconds reached", file=sys.stderr)
                break
    print(f"slowest 'fakeprovider check' at 10 N: {worst:.2f} s")


if __name__ == "__main__":
    main()
