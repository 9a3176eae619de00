"""The journal as a table, one line per entry: the pytest plugin's timeline of a failing test,
``fakeprovider journal FILE`` and the live request lines of ``serve --log-requests``."""

from __future__ import annotations

from collections.abc import Iterable

from .entries import EntryLike
from .journal import Entry, order_entries

__all__ = ["RunLines", "entry_line", "header_line", "journal_table"]


def entry_line(entry: EntryLike, start: float) -> str:
    """``#seq  time since start  METHOD path -> answer  status, error, Retry-After, fault``."""
    if entry.dropped is not None:
        answer = f"dropped ({entry.dropped})"
    elif entry.status_code is None:
        answer = "(no answer yet)"
    else:
        answer = str(entry.status_code)
    extra = [x for x in (entry.job_status, entry.error_code) if x]
    if entry.retry_after is not None:
        extra.append(f"Retry-After: {entry.retry_after.raw}")
    if entry.fault:
        extra.append(f"fault {entry.fault}")
    if entry.kind == "webhook" and entry.event:
        extra.append(f"event {entry.event}")
    tail = f"  {', '.join(extra)}" if extra else ""
    return (
        f"  #{entry.seq:<4} {entry.received_at - start:9.3f}s  {entry.method} {entry.path}"
        f" -> {answer}{tail}"
    )


def header_line(entry: Entry) -> str:
    """A run header in words: what was played, how, and when."""
    run = entry.run or {}
    return (
        f"run of {run.get('scenario')!r} ({run.get('digest')}) in the {run.get('dialect')}"
        f" dialect, time scale {run.get('time_scale')}, seed {run.get('seed')},"
        f" fakeprovider {run.get('version')}, started {run.get('started')}"
    )


class RunLines:
    """Entries as table lines, one after another, times from the start of their run: a run
    header, or the admin request that reset the fake or loaded a scenario, restarts the clock
    at 0. Each run header is a line of its own."""

    def __init__(self) -> None:
        self.start: float | None = None

    def lines(self, e: Entry) -> list[str]:
        out: list[str] = []
        if e.is_header:
            out.append(header_line(e))
            self.start = e.received_at
            if e.method == "RUN":
                return out
        elif e.kind == "admin" and e.path in ("/__admin/reset", "/__admin/scenario"):
            self.start = e.received_at
        if self.start is None:
            self.start = e.received_at
        out.append(entry_line(e, self.start))
        return out


def journal_table(entries: Iterable[Entry]) -> str:
    """Every entry on one line, times from the start of its run (a run header or a reset
    restarts the clock at 0); each run header as a line of its own."""
    table = RunLines()
    lines = [line for e in order_entries(entries) for line in table.lines(e)]
    return "\n".join(lines) if lines else "(no requests)"
