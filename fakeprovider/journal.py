"""The journal: every request the fake received, with what it answered and when.

Entries are appended when a request is received and completed when its response has been
sent; ``Journal`` is list-like (after respx's ``CallList``) and thread-safe, and writes each
completed entry as one JSON line to an optional sink, flushed as it goes.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, overload

__all__ = ["Entry", "Journal", "RetryAfterRecord", "read_journal"]

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
    #: True when the answer carried the job's result itself (a status read whose body holds
    #: the video inline): such an answer is a retrieval, as a content download is.
    inline_result: bool | None = None

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
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown journal field(s): {', '.join(sorted(unknown))}")
        for required in ("seq", "kind", "method", "path", "client", "received_at"):
            if required not in data:
                raise ValueError(f"missing journal field {required!r}")
        values = {"job_id": None, **data}
        ra = values.get("retry_after")
        if isinstance(ra, dict):
            values["retry_after"] = RetryAfterRecord(**ra)
        listed = values.get("listed")
        if isinstance(listed, dict):
            values["listed"] = tuple((str(k), str(v)) for k, v in listed.items())
        return cls(**values)


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Entry))


@dataclass
class Journal(Sequence[Entry]):
    """An append-only, thread-safe list of entries with an optional JSONL sink."""

    sink: IO[str] | None = None
    _entries: list[Entry] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _next_seq: int = 1

    def next_seq(self) -> int:
        with self._lock:
            seq = self._next_seq
            self._next_seq += 1
            return seq

    def append(self, entry: Entry) -> Entry:
        with self._lock:
            self._entries.append(entry)
            if entry.completed_at is not None:
                self._write(entry)
        return entry

    def complete(self, seq: int, **changes: Any) -> Entry | None:
        """Fill in the response side of entry ``seq`` (times, status code) and write it out.

        Returns None when the entry is gone (the journal was cleared while the request ran).
        """
        with self._lock:
            for index in range(len(self._entries) - 1, -1, -1):
                entry = self._entries[index]
                if entry.seq == seq:
                    # Completed in place: the entry stood for a request in flight until now.
                    # (dataclasses.replace would cost more than the rest of a request.)
                    for name, value in changes.items():
                        object.__setattr__(entry, name, value)
                    self._write(entry)
                    return entry
        return None

    def clear(self) -> None:
        """Forget every entry (sequence numbers go on, so a JSONL file stays unambiguous)."""
        with self._lock:
            self._entries.clear()

    def _write(self, entry: Entry) -> None:
        if self.sink is not None:
            self.sink.write(json.dumps(entry.to_dict(), separators=(",", ":")) + "\n")
            self.sink.flush()

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
        return "".join(json.dumps(e.to_dict(), separators=(",", ":")) + "\n" for e in self)

    def __repr__(self) -> str:
        return f"<Journal {len(self)} entries>"

    __hash__ = None  # type: ignore[assignment]


def read_journal(source: str | Path | IO[str]) -> list[Entry]:
    """Entries from a JSONL file (or open text stream), sorted by ``seq``.

    Raises ``ValueError`` naming the line of the first bad entry.
    """
    if isinstance(source, (str, Path)):
        with open(source, encoding="utf-8") as handle:
            return read_journal(handle)
    entries = []
    name = getattr(source, "name", "<journal>")
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("expected a JSON object")
            entries.append(Entry.from_dict(data))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name}:{number}: not a journal entry: {exc}") from None
    return sorted(entries, key=lambda e: e.seq)
