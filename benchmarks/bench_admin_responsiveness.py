"""How long ``/__admin/health`` takes while ``/__admin/report`` and ``/__admin/journal`` work
on a big journal: both run off the event loop, so health should stay quick.

A real server on loopback holds N synthetic entries (a tight poller of one job); one thread asks
for the report (then the journal dump) while the main thread polls health every 10 ms until it
is done. Prints each big request's time and the health latencies seen meanwhile. Bounded: one
report and one dump, N entries.

    python benchmarks/bench_admin_responsiveness.py --entries 100000
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import httpx

from fakeprovider.journal import Entry
from fakeprovider.provider import FakeProvider
from fakeprovider.server import ServerThread


def fill(provider: FakeProvider, entries: int) -> None:
    journal = provider.journal
    for i in range(entries):
        at = i * 0.01
        journal.append(
            Entry(
                seq=journal.next_seq(),
                kind="status",
                job_id="job_1",
                method="GET",
                path="/v1/jobs/job_1",
                client="poller",
                received_at=at,
                response_started_at=at,
                completed_at=at + 0.001,
                status_code=200,
                job_status="processing",
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    args = parser.parse_args()
    provider = FakeProvider("slow-success")
    fill(provider, args.entries)
    with (
        ServerThread(provider) as server,
        httpx.Client(base_url=server.url, timeout=300) as big,
        httpx.Client(base_url=server.url, timeout=30) as health,
    ):
        for route in ("/__admin/report", "/__admin/journal"):
            took: list[float] = []

            def ask(route: str = route, took: list[float] = took) -> None:
                start = time.perf_counter()
                big.get(route).raise_for_status()
                took.append(time.perf_counter() - start)

            worker = threading.Thread(target=ask)
            worker.start()
            latencies = []
            while worker.is_alive():
                start = time.perf_counter()
                health.get("/__admin/health").raise_for_status()
                latencies.append((time.perf_counter() - start) * 1000)
                time.sleep(0.01)
            worker.join()
            print(
                f"{route} on {args.entries:,} entries: {took[0]:.2f} s; health meanwhile:"
                f" {len(latencies)} answers, median {statistics.median(latencies or [0]):.1f} ms,"
                f" max {max(latencies or [0]):.1f} ms"
            )


if __name__ == "__main__":
    main()
