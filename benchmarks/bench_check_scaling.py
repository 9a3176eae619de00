"""How ``check`` scales with the journal: time per entry at N and at 10 N entries, same run.

The journal is the hard case for the rules that compare requests with each other: one client
submitting the same request body many times (a batch of identical prompts), each job shown done
at its submit and read once more. Linear rules keep the time per entry flat; the ratio
(time per entry at 10 N) / (time per entry at N) is the number that matters (1.0 is linear,
10 would be quadratic).

    python benchmarks/bench_check_scaling.py [--entries 1000] [--rounds 3] [--max-seconds 60]
"""

from __future__ import annotations

import argparse
import statistics
import time

from fakeprovider.invariants import Limits, check
from fakeprovider.journal import Entry


def journal(entries: int) -> list[Entry]:
    out: list[Entry] = []
    for n in range(1, entries // 2 + 1):
        job = f"job_{n}"
        for seq, kind, path in ((2 * n - 1, "submit", "/v1/jobs"), (2 * n, "status", job)):
            out.append(
                Entry(
                    seq=seq,
                    kind=kind,
                    job_id=job,
                    method="POST" if kind == "submit" else "GET",
                    path=path,
                    client="batch",
                    received_at=float(seq),
                    response_started_at=float(seq),
                    completed_at=float(seq),
                    status_code=202 if kind == "submit" else 200,
                    job_status="succeeded",
                    request_digest="same-prompt",
                )
            )
    return out


def per_entry(entries: list[Entry], rounds: int, stop: float) -> float:
    times = []
    for _ in range(rounds):
        if time.monotonic() > stop:
            break
        start = time.perf_counter()
        check(entries, Limits()).render()
        times.append((time.perf_counter() - start) / len(entries))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    args = parser.parse_args()
    stop = time.monotonic() + args.max_seconds
    small = per_entry(journal(args.entries), args.rounds, stop)
    large = per_entry(journal(10 * args.entries), args.rounds, stop)
    print(f"{args.entries:>7} entries: {small * 1e6:8.1f} us per entry")
    print(f"{10 * args.entries:>7} entries: {large * 1e6:8.1f} us per entry")
    print(f"ratio (10x journal / 1x journal, per entry): {large / small:.2f}")


if __name__ == "__main__":
    main()
