"""The journal: every request the fake received, with what it answered and when.

Entries are appended when a request is received and completed when its response has been
sent; ``Journal`` is list-like (after respx's ``CallList``) and thread-safe, and writes each
completed entry as one JSON line to an optional sink, flushed as it goes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import json
import logging
import operator
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, overload

__all__ = ["Entry", "Journal", "RetryAfterRecord", "order_entries", "read_journal"]

#: Shared with the server: a journal that cannot be written is reported there, once.
logger = logging.getLogger("fakeprovider.server")

Kind = Literal["submit", "status", "content", "cancel", "list", "webhook", "admin", "unknown"]
KINDS: tuple[str, ...] = (
    "submit",
    "status",
    "content",
    "cancel",
    "list",
    "webhook",
    "admin",
    "unknown",
)


@dataclass(frozen=True)
class RetryAfterRecord:
    """A ``Retry-After`` (or ``retry-after-ms``) the fake sent, and the instant it meant."""

    raw: str
    not_before: float | None
    header: str = "retry-after"
    form: str = "seconds"


@dataclass(frozen=True, slots=True)
class Entry:
    """One request (or webhook delivery) and its answer. Times are clock seconds."""

    seq: int
    kind: str
    job_id: str | None
    method: str
    path: str
    client: str
    received_at: float
    response_started_at: float | None = None
    completed_at: float | None = None
    status_code: int | None = None
    job_status: str | None = None
    retry_after: RetryAfterRecord | None = None
    fault: str | None = None
    #: The job's real state when the request was handled (whatever the response showed).
    true_status: str | None = None
    #: When the job entered ``true_status``.
    status_since: float | None = None
    #: The poll hint the response gave, in seconds.
    poll_after: float | None = None
    #: The error code of an error answer (``job_not_found``, ``rate_limited``...).
    error_code: str | None = None
    #: A short fingerprint of the credential used (never the credential itself).
    credential: str | None = None
    idempotency_key: str | None = None
    #: A fingerprint of a submit's body, to tell one logical request from another.
    request_digest: str | None = None
    #: 'reset' or 'lose_response' when the connection was dropped on purpose.
    dropped: str | None = None
    #: For webhook deliveries: event type, webhook-id, attempt number, what was special.
    event: str | None = None
    webhook_id: str | None = None
    attempt: int | None = None
    delivery: str | None = None
    #: For list answers: ``(job_id, status)`` of every job the list showed.
    listed: tuple[tuple[str, str], ...] | None = None
    #: For a run header (an ``admin`` entry that starts a run): what was played and how
    #: (scenario, digest, dialect, time_scale, seed, version, started, limits).
    run: dict[str, Any] | None = None
    #: True when the answer carried the job's result itself (a status read whose body holds
    #: the video inline): such an answer is a retrieval, as a content download is.
    inline_result: bool | None = None

    @property
    def is_header(self) -> bool:
        """Whether this entry is a run header (it starts a run; see ``order_entries``)."""
        return self.run is not None

    @property
    def latency(self) -> float | None:
        if self.completed_at is None:
            return None
        return self.completed_at - self.received_at

    @property
    def failed(self) -> bool:
        """A transport-level failure: 5xx, 429, or a dropped connection."""
        code = self.status_code
        return self.dropped is not None or code is None or code == 429 or code >= 500

    def to_dict(self) -> dict[str, Any]:
        # By hand rather than dataclasses.asdict (which deep-copies): this runs once per request.
        out = {name: getattr(self, name) for name in _FIELD_NAMES}
        if self.retry_after is not None:
            ra = self.retry_after
            out["retry_after"] = {
                "raw": ra.raw,
                "not_before": ra.not_before,
                "header": ra.header,
                "form": ra.form,
            }
        if self.listed is not None:
            out["listed"] = dict(self.listed)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        """The entry a decoded journal line stands for.

        Raises ``ValueError`` naming the field and what it expected (``_journal_schema``).
        """
        from ._journal_schema import entry_from_dict

        return entry_from_dict(data)


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Entry))


class Journal(Sequence[Entry]):
    """An append-only, thread-safe list of entries with an optional JSONL sink.

    An entry is appended when its request is received and completed (then written to the
    sink) when its answer has gone out. ``clear()`` starts a new run: the entries of requests
    still in flight leave the list but are still completed and written when their answers go
    out (they belong to the run they started in). ``memory`` keeps only the last that many
    entries in memory (the sink still gets every one). A sink that fails to write is reported
    once to the ``fakeprovider.server`` logger and written no more (``sink_error`` says why);
    requests are answered and kept in memory as before.
    """

    def __init__(self, sink: IO[str] | None = None, *, memory: int | None = None) -> None:
        if memory is not None and memory < 1:
            raise ValueError(f"memory must be at least 1 entry, got {memory}")
        self.sink = sink
        self.memory = memory
        self._entries: deque[Entry] = deque(maxlen=memory)
        #: Entries received but not completed, by seq, whether still listed or not.
        self._pending: dict[int, Entry] = {}
        self._lock = threading.Lock()
        self._next_seq = 1
        #: The first seq of the current run (entries from before the last ``clear()`` are older).
        self._run_start = 1
        #: Entries forgotten from memory since the last ``clear()`` (``memory`` was reached).
        self.forgotten = 0
        #: Why the sink stopped being written, if it did.
        self.sink_error: OSError | None = None
        #: The run header written to the sink when the current run started without an admin
        #: request (a server start, ``FakeProvider.reset()``); not one of the entries.
        self.header: Entry | None = None
        #: Called with every entry as it is written (``serve --log-requests``); must not raise.
        self.listener: Callable[[Entry], None] | None = None

    def next_seq(self) -> int:
        with self._lock:
            seq = self._next_seq
            self._next_seq += 1
            return seq

    def append(self, entry: Entry) -> Entry:
        with self._lock:
            if self.memory is not None and len(self._entries) == self.memory:
                self.forgotten += 1
            self._entries.append(entry)
            if entry.completed_at is None:
                self._pending[entry.seq] = entry
            else:
                self._write(entry)
        return entry

    def complete(self, seq: int, **changes: Any) -> Entry | None:
        """Fill in the response side of entry ``seq`` (times, status code) and write it out.

        Works for an entry a ``clear()`` took out of the list too (a request in flight across
        a reset). Returns None when no entry ``seq`` is waiting to be completed.
        """
        with self._lock:
            entry = self._pending.pop(seq, None)
            if entry is None:
                return None
            # Completed in place: the entry stood for a request in flight until now.
            # (dataclasses.replace would cost more than the rest of a request.)
            for name, value in changes.items():
                object.__setattr__(entry, name, value)
            self._write(entry)
            return entry

    def clear(self) -> None:
        """Start a new run: forget every entry (sequence numbers go on, so a JSONL file stays
        unambiguous). Entries still in flight are written to the sink when they complete."""
        with self._lock:
            self._entries.clear()
            self.forgotten = 0
            self._run_start = self._next_seq
            self.header = None

    def attach(self, sink: IO[str]) -> None:
        """Write to ``sink`` from now on, starting with the current run's header (if any).

        Raises ``OSError`` when ``sink`` cannot take the header: a journal that cannot be
        written is refused before anything is served.
        """
        with self._lock:
            if self.header is not None:
                sink.write(json.dumps(self.header.to_dict(), separators=(",", ":")) + "\n")
                sink.flush()
            self.sink = sink
            self.sink_error = None

    def start_run(self, header: Entry) -> None:
        """Write ``header`` (a run header) to the sink; ``to_jsonl`` starts with it."""
        with self._lock:
            self.header = header
            self._write(header)

    def run_entries(self) -> list[Entry]:
        """Every entry of the current run, sorted by ``seq``: from memory, or, when ``memory``
        made it forget some, from the sink's file (plus the entries still in flight). Reads a
        file, so call it off the event loop."""
        with self._lock:
            listed = sorted(self._entries, key=lambda e: e.seq)
            if not self.forgotten or self.sink_error is not None:
                return listed
            start = self._run_start
            path = getattr(self.sink, "name", None)
        if not isinstance(path, str) or not Path(path).is_file():
            return listed
        found: dict[int, Entry] = {}
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.endswith("\n"):
                    break  # a line being written right now
                try:
                    entry = Entry.from_dict(json.loads(line))
                except (ValueError, TypeError):
                    continue  # not ours (the file may hold anything before this server's lines)
                if entry.seq >= start:
                    found[entry.seq] = entry
        for entry in listed:  # in flight (not written yet), or written after the read
            found.setdefault(entry.seq, entry)
        return sorted(found.values(), key=lambda e: e.seq)

    @property
    def in_flight(self) -> int:
        """How many entries wait for their answer to go out (this run's and earlier ones')."""
        with self._lock:
            return len(self._pending)

    def _write(self, entry: Entry) -> None:
        sink = self.sink
        if self.listener is not None:
            self.listener(entry)
        if sink is None or self.sink_error is not None:
            return
        try:
            sink.write(json.dumps(entry.to_dict(), separators=(",", ":")) + "\n")
            sink.flush()
        except OSError as exc:
            self.sink_error = exc
            name = getattr(sink, "name", "the journal")
            logger.error(
                "cannot write the journal to %s: %s; entries are kept in memory only from now on",
                name,
                exc.strerror or exc,
            )

    # -- list-like ------------------------------------------------------------------------

    def snapshot(self) -> list[Entry]:
        with self._lock:
            return sorted(self._entries, key=lambda e: e.seq)

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        return self.snapshot()[index]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.snapshot())

    @property
    def called(self) -> bool:
        return len(self) > 0

    @property
    def call_count(self) -> int:
        return len(self)

    @property
    def last(self) -> Entry:
        entries = self.snapshot()
        if not entries:
            raise IndexError("the journal is empty")
        return entries[-1]

    def filter(self, *, kind: str | None = None, job_id: str | None = None) -> list[Entry]:
        return [
            e
            for e in self.snapshot()
            if (kind is None or e.kind == kind) and (job_id is None or e.job_id == job_id)
        ]

    def to_jsonl(self) -> str:
        """The entries as JSONL, after the run header when there is one (as the sink has them)."""
        with self._lock:
            header = self.header
        entries = [header, *self] if header is not None else list(self)
        return "".join(json.dumps(e.to_dict(), separators=(",", ":")) + "\n" for e in entries)

    def __repr__(self) -> str:
        return f"<Journal {len(self)} entries>"

    __hash__ = None  # type: ignore[assignment]


_SEQ = operator.attrgetter("seq")


def order_entries(entries: Iterable[Entry]) -> list[Entry]:
    """``entries`` sorted by ``seq``, process by process.

    Every server process starts its journal with a run header numbered 0, and ``seq`` counts
    from 1 again in each process: when several processes appended to one file, each one's
    entries (from its header on, in file order) are sorted apart and the processes stay in
    file order. With at most one such header, this is a plain sort by ``seq``.
    """
    given = list(entries)
    starts = [i for i, e in enumerate(given) if e.seq == 0 and e.is_header]
    if len(starts) <= 1:
        return sorted(given, key=_SEQ)
    bounds = [0, *(i for i in starts if i > 0), len(given)]
    out: list[Entry] = []
    for low, high in itertools.pairwise(bounds):
        out.extend(sorted(given[low:high], key=_SEQ))
    return out


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Hold the cyclic garbage collector while reading or judging a journal.

    Both build many small objects and keep most of them (no cycles among them), so each
    collection would walk every entry read so far for nothing: on a large journal that is
    about a third of the time. Reference counting still frees what is dropped; collection
    resumes (if it was on) when the block ends.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def read_journal(source: str | Path | IO[str] | IO[bytes]) -> list[Entry]:
    """Entries from a JSONL file (or open text or binary stream), sorted by ``seq``
    (``order_entries``). The file is read a line at a time.

    Raises ``ValueError`` as ``FILE:LINE: field: what was expected`` for the first line that
    is not an entry (not UTF-8, not JSON, a field missing or of the wrong type).
    """
    from ._journal_schema import parse_lines

    with paused_gc():
        if isinstance(source, (str, Path)):
            with open(source, "rb") as handle:
                return order_entries(parse_lines(handle, str(source)))
        name = getattr(source, "name", "<journal>")
        return order_entries(parse_lines(source, str(name)))
