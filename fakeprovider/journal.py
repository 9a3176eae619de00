"""The journal: every request the fake received, with what it answered and when.

Entries are appended when a request is received and completed when its response has been
sent; ``Journal`` is list-like (after respx's ``CallList``) and thread-safe. It keeps completed
entries in a ``JournalStore`` (``MemoryStore``: packed in columns, bounded on request) and writes
each as one JSON line to an optional ``JournalSink`` (``StreamSink``: flushed as it goes;
``BatchedSink``: a writer thread, so no answer waits for the disk).
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import dataclasses
import gc
import itertools
import logging
import math
import operator
import os
import stat
import threading
from array import array
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Protocol, overload, runtime_checkable

from .entries import (
    FIELD_NAMES,
    Entry,
    EntryLike,
    RetryAfterRecord,
    _as_entries,
    _flat_values,
    _rows_lines,
    entry_batches,
    iter_entries,
    jsonl_line,
    jsonl_lines,
    readable_entries,
    record_batches,
)

__all__ = [
    "BatchedSink",
    "Entry",
    "Journal",
    "JournalSink",
    "JournalStore",
    "MemoryStore",
    "RetryAfterRecord",
    "RunFile",
    "StreamSink",
    "iter_journal",
    "iter_record_batches",
    "iter_records",
    "order_entries",
    "read_journal",
]

#: Shared with the server: a journal that cannot be written is reported there, once.
logger = logging.getLogger("fakeprovider.server")


def _report_failure(sink: object, exc: OSError) -> None:
    logger.error(
        "cannot write the journal to %s: %s; entries are kept in memory only from now on",
        getattr(sink, "name", None) or "the journal",
        exc.strerror or exc,
    )


# -- where completed entries are kept -------------------------------------------------------


@runtime_checkable
class JournalStore(Protocol):
    """Where a journal keeps the completed entries of the current run.

    ``MemoryStore`` (this process's memory) is the default; a store shared by several server
    processes could stand in for it without the engine knowing. The journal calls it under its
    own lock, one call at a time.
    """

    @property
    def forgotten(self) -> int:
        """Entries of the current run no longer kept (a bounded store dropped the oldest)."""
        ...

    def add(self, entry: Entry) -> None:
        """Keep ``entry`` (completed: it will not change any more)."""
        ...

    def entries(self) -> Iterator[Entry]:
        """The entries kept, in the order added. What is kept is read when this is called;
        the entries may be made while the caller iterates (outside the journal's lock)."""
        ...

    def clear(self) -> None:
        """Start a new run: forget every entry."""
        ...

    def __len__(self) -> int: ...


#: Entries a ``MemoryStore`` packs at a time (and frees at a time when bounded).
_CHUNK = 512
#: Columns a ``MemoryStore`` packs an ``add`` (``_Packed.steps``): a chunk is packed over the
#: next few adds, not at once.
_SLOTS_A_STEP = 2
#: Distinct strings a ``MemoryStore`` shares between rows before it starts sharing afresh.
_SHARED_STRINGS = 8192
_SLOT = {name: i for i, name in enumerate(FIELD_NAMES)}
#: ``Journal.finish`` fills a row's answer in at these places (literals there: cheaper).
if FIELD_NAMES[7:10] != ("response_started_at", "completed_at", "status_code"):  # pragma: no cover
    raise AssertionError("Journal.finish fills in fields 7-9 of a row: update it")
_TIME_SLOTS = frozenset(
    _SLOT[name] for name in ("received_at", "response_started_at", "completed_at")
)
#: Strings that each request makes anew but that repeat from request to request.
_SHARED_SLOTS = frozenset(
    _SLOT[name] for name in ("job_id", "method", "path", "client", "credential")
)
_NAN = math.nan  # a time that is None (a NaN time leaves its chunk unpacked)
_FLOAT_OR_NONE = {float, type(None)}
_FLOAT = {float}


def _times(column: list[Any]) -> array[float] | None:
    """``column`` packed (None as NaN), or None when it would not come back exactly."""
    types = set(map(type, column))
    if types == _FLOAT:
        total = sum(column)
        if total - total == 0:  # no NaN (nor infinity, nor an overflow: those look closer)
            return array("d", column)
    if not types <= _FLOAT_OR_NONE or any(map(math.isnan, filter(None, column))):
        return None
    return array("d", [_NAN if t is None else t for t in column])


_WIDTH = len(FIELD_NAMES)


class _Packed:
    """Entries in columns, one per field: ``seq`` and the times packed (8 bytes each), the
    others as references (strings shared with the rows around), a column of Nones as None.
    Made once, never changed."""

    __slots__ = ("columns", "size")

    def __init__(self, columns: list[Any], size: int) -> None:
        self.columns = columns
        self.size = size

    @classmethod
    def of(cls, entries: list[Entry | list[Any]], shared: dict[str, str]) -> _Packed | None:
        """``entries`` packed (each an entry or a row: the list of its field values), or None
        when a value would not come back exactly (an int time, a NaN, an unhashable string
        field: entries made by hand)."""
        steps = cls.steps(entries, shared)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    @classmethod
    def steps(
        cls, entries: list[Entry | list[Any]], shared: dict[str, str]
    ) -> Generator[None, None, _Packed | None]:
        """``of(entries, shared)`` a part at a time: each ``next`` does one part (the flat
        list, then ``_SLOTS_A_STEP`` columns), the last returns (``StopIteration.value``) what
        ``of`` returns. ``entries`` must not change meanwhile."""
        # every value in one flat list, row after row; a column is every _WIDTH-th value
        # (a slice, in C, where zip(*rows) over 512 rows costs three times as much)
        flat = _flat_values(entries)
        nones = [None] * len(entries)
        columns: list[Any] = []
        for slot in range(_WIDTH):
            if slot % _SLOTS_A_STEP == 0:
                yield
            column = flat[slot::_WIDTH]
            packed: Any
            if column == nones:
                packed = None
            elif slot == 0:
                if set(map(type, column)) != {int}:
                    return None
                try:
                    packed = array("q", column)
                except OverflowError:
                    return None
            elif slot in _TIME_SLOTS:
                packed = _times(column)
                if packed is None:
                    return None
            elif slot in _SHARED_SLOTS:
                try:
                    packed = tuple(map(shared.setdefault, column, column))
                except TypeError:
                    return None
            else:
                packed = tuple(column)
            columns.append(packed)
        return cls(columns, len(entries))

    def __len__(self) -> int:
        return self.size

    def entries(self, begin: int) -> Iterator[Entry]:
        count = self.size - begin
        columns: list[Iterable[Any]] = []
        for slot, column in enumerate(self.columns):
            if column is None:
                columns.append(itertools.repeat(None, count))
            elif slot in _TIME_SLOTS:
                columns.append([None if t != t else t for t in column[begin:]])
            else:
                columns.append(column[begin:])
        return itertools.starmap(Entry, zip(*columns, strict=True))


class MemoryStore:
    """The default ``JournalStore``: the entries in this process's memory, packed in columns
    ``_CHUNK`` at a time (some 130 bytes an entry where the entry itself takes some 600), and
    made again when read. ``limit`` keeps only the last that many entries (the oldest are
    freed a chunk at a time, so up to ``limit + _CHUNK`` take memory)."""

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"memory must be at least 1 entry, got {limit}")
        self.limit = limit
        self._chunks: deque[_Packed | list[Entry | list[Any]]] = deque()
        #: The entries added since the last chunk was packed (an entry, or a row: the list of
        #: an entry's field values, as ``Journal.append_values`` keeps it).
        self._young: list[Entry | list[Any]] = []
        #: Rows of the first chunk no longer kept.
        self._start = 0
        self._size = 0
        self._forgotten = 0
        self._shared: dict[str, str] = {}
        #: The chunk being packed, a part an ``add`` (``_Packed.steps``), kept as its list of
        #: entries meanwhile; None when none is.
        self._packing: Generator[None, None, _Packed | None] | None = None
        self._unpacked: list[Entry | list[Any]] = []

    @property
    def forgotten(self) -> int:
        return self._forgotten

    def add(self, entry: Entry | list[Any]) -> None:
        """Keep ``entry`` (or a row: the list of an entry's field values, completed, which no
        one changes any more: ``Journal`` hands those)."""
        young = self._young
        young.append(entry)
        self._size += 1
        if self._packing is not None:
            self._pack_step()
        if len(young) == _CHUNK:
            self._pack()
        if self.limit is not None and self._size > self.limit:
            self._size -= 1
            self._forgotten += 1
            if not self._chunks:
                del self._young[0]
                return
            self._start += 1
            if self._start == len(self._chunks[0]):
                self._chunks.popleft()
                self._start = 0

    def _pack(self) -> None:
        """Make the young entries (``_CHUNK`` of them) a chunk, packed a part at each of the
        next ``add``s (``_pack_step``): packing all of them at once held the caller (the event
        loop) for most of a millisecond every ``_CHUNK`` entries."""
        while self._packing is not None:  # (never: the last one ended ``_CHUNK`` adds ago)
            self._pack_step()
        if len(self._shared) > _SHARED_STRINGS:
            self._shared.clear()
        young = self._young
        self._chunks.append(young)
        self._young = []
        self._unpacked = young
        self._packing = _Packed.steps(young, self._shared)

    def _pack_step(self) -> None:
        """Pack one more part of the chunk being packed; the chunk packed takes the place of
        its list when done (unless it was freed meanwhile: ``limit``)."""
        assert self._packing is not None
        try:
            next(self._packing)
        except StopIteration as done:
            packed = done.value
            chunks = self._chunks
            if packed is not None and chunks and chunks[-1] is self._unpacked:
                chunks[-1] = packed
            self._packing = None
            self._unpacked = []

    def entries(self) -> Iterator[Entry]:
        # Chunks never change once made; the young entries are copied now (rows too: a row
        # kept is completed, and no one changes it any more).
        parts: list[tuple[_Packed | list[Entry | list[Any]], int]] = [
            (chunk, 0) for chunk in self._chunks
        ]
        if parts:
            parts[0] = (parts[0][0], self._start)
        young = list(self._young)
        return itertools.chain(
            itertools.chain.from_iterable(
                chunk.entries(begin) if isinstance(chunk, _Packed) else _as_entries(chunk[begin:])
                for chunk, begin in parts
            ),
            _as_entries(young),
        )

    def clear(self) -> None:
        self._chunks.clear()
        self._young = []
        self._packing = None
        self._unpacked = []
        self._start = self._size = self._forgotten = 0
        self._shared.clear()

    def __len__(self) -> int:
        return self._size


# -- where completed entries are written ----------------------------------------------------


@runtime_checkable
class JournalSink(Protocol):
    """Where a journal writes each completed entry as one JSON line, in the order completed.

    ``StreamSink`` writes and flushes each line as it comes (what a plain stream given to a
    ``Journal`` becomes); ``BatchedSink`` hands them to a writer thread that writes them a
    batch at a time, so no request waits for the disk (what ``serve`` and ``run`` use).
    """

    #: The file written, if it is one (reports read it back when memory is bounded).
    name: str | None

    def write_entry(self, entry: Entry) -> None:
        """Take ``entry``. Raises ``OSError`` when writing failed (now, or since the last call)."""
        ...

    def flush(self) -> None:
        """Write out every entry taken so far. Raises ``OSError`` when that failed."""
        ...

    def close(self) -> None:
        """Flush, then stop (the stream itself stays open: it is its opener's to close)."""
        ...


def _stream_name(stream: IO[str]) -> str | None:
    name = getattr(stream, "name", None)
    return name if isinstance(name, str) else None


#: Where a sink's file stood when the sink took it: (device, inode, size in bytes).
_Origin = tuple[int, int, int]


def _file_origin(stream: IO[str]) -> _Origin | None:
    """The file under ``stream`` as a sink starts writing it, when the sink can count where
    its lines land: a regular file named by ``stream.name``, written in UTF-8 at its end.
    None otherwise (a pipe, a socket, a stream of no file, another encoding)."""
    if _stream_name(stream) is None:
        return None
    try:
        if codecs.lookup(getattr(stream, "encoding", None) or "ascii").name != "utf-8":
            return None
        stream.flush()
        at = stream.tell()
        found = os.fstat(stream.fileno())
    except (OSError, ValueError, LookupError):  # io.UnsupportedOperation is both
        return None
    if not stat.S_ISREG(found.st_mode) or at != found.st_size:
        return None
    return (found.st_dev, found.st_ino, at)


def _encoded_size(text: str) -> int:
    """Bytes ``text`` takes in UTF-8 (no copy for ASCII, which jsonl_line's lines mostly are)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _checked_end(name: str | None, origin: _Origin | None, written: int) -> int | None:
    """``origin``'s size plus ``written``, if the file at ``name`` is still the one the sink
    took and holds exactly that many bytes (no other writer, not truncated, not replaced)."""
    if name is None or origin is None:
        return None
    try:
        found = os.stat(name)
    except OSError:
        return None
    end = origin[2] + written
    if (found.st_dev, found.st_ino) != origin[:2] or found.st_size != end:
        return None
    return end


class StreamSink:
    """Each entry written to ``stream`` and flushed as it comes, by the caller."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.name = _stream_name(stream)
        self._origin = _file_origin(stream)
        #: Bytes written to the file since the sink took it.
        self._written = 0

    def write_entry(self, entry: Entry) -> None:
        line = jsonl_line(entry)
        self.stream.write(line)
        self.stream.flush()
        self._written += _encoded_size(line)

    def position(self) -> int | None:
        """The byte offset in the file at which the next line taken will start; None when
        the sink cannot tell (see ``BatchedSink.position``)."""
        origin = self._origin
        return None if origin is None else origin[2] + self._written

    def written_end(self) -> int | None:
        """The byte offset just past the last line written, if the file is still this sink's
        alone as far as can be told (``BatchedSink.written_end``); else None."""
        return _checked_end(self.name, self._origin, self._written)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


#: Seconds a ``BatchedSink`` lets lines gather before it writes them.
BATCH_INTERVAL = 0.05
#: Lines that make a ``BatchedSink`` write at once, whatever the interval.
BATCH_LINES = 4096
#: Entries a ``BatchedSink`` takes before encoding them at once (``jsonl_lines``).
ENCODE_LINES = 128
#: Lines a ``BatchedSink`` holds at most (waiting, and being written) before a new line waits
#: for room: some 40 MB of 600-byte lines, two seconds of a fast server's requests.
BATCH_MAX_LINES = 65536
#: Seconds a new line waits at most, the sink full, for its writer to make room.
BATCH_FULL_WAIT = 0.05
#: Batched sinks not closed yet: flushed when the interpreter exits (nothing answered is lost).
_OPEN_SINKS: set[BatchedSink] = set()
_OPEN_LOCK = threading.Lock()


class BatchedSink:
    """Entries written to ``stream`` a batch at a time by a writer thread: the caller only
    appends the entry to a list, and never waits for the disk while there is room. Every
    ``ENCODE_LINES`` entries, the caller encodes them at once (``jsonl_lines``: a third of the
    CPU of a line at a time, and done while they are still in the CPU's cache).

    The thread writes (and flushes) what has gathered every ``interval`` seconds, or at once
    when ``BATCH_LINES`` lines wait. ``flush()`` writes what waits in the caller's thread
    (batches stay in order); ``close()`` flushes and stops the thread. A sink still open when
    the interpreter exits is flushed then. Use as a context manager to close it.

    Bounded: at most ``max_lines`` lines are held (waiting, plus the batch being written).
    When the disk is slower than the requests (or stalls), a new line past that waits up to
    ``full_wait`` seconds for the writer to make room, so the server answers at the disk's
    pace instead of growing without bound; then it is kept all the same, never dropped. So a
    caller (the event loop) waits at most ``full_wait`` per line, and a disk that stops
    altogether slows the server to about one answer per ``full_wait`` while memory grows by
    one line per ``full_wait``; every line taken is written once the disk moves again, and
    at exit (SIGTERM or SIGINT included) by ``close()`` or the interpreter's exit.

    A write that fails is raised by the next ``write_entry``, ``flush`` or ``close`` (once), and
    from then on lines are dropped. An entry that has no JSON line (a value JSON cannot hold,
    which ``jsonl_line`` refuses: never one the fake makes) is left out, and its error raised
    by the ``write_entry`` that encodes it (or the next call, when the writer did); the other
    entries are written.
    """

    def __init__(
        self,
        stream: IO[str],
        *,
        interval: float = BATCH_INTERVAL,
        max_lines: int = BATCH_MAX_LINES,
        full_wait: float = BATCH_FULL_WAIT,
    ) -> None:
        if not 0 < interval <= 60:
            raise ValueError(f"interval must be between 0 and 60 seconds, got {interval!r}")
        if max_lines < 1:
            raise ValueError(f"max_lines must be at least 1, got {max_lines!r}")
        if not 0 <= full_wait <= 60:
            raise ValueError(f"full_wait must be between 0 and 60 seconds, got {full_wait!r}")
        self.stream = stream
        self.name = _stream_name(stream)
        self.interval = interval
        self.max_lines = max_lines
        self.full_wait = full_wait
        #: Lines encoded and waiting for the writer, a run of lines per string.
        self._lines: list[str] = []
        #: How many lines ``_lines`` holds.
        self._encoded = 0
        #: Entries taken since, not encoded yet (they come after ``_lines``); an entry may be
        #: a row (the list of its field values: ``Journal`` hands those).
        self._fresh: list[Entry | list[Any]] = []
        #: Lines of the batch being written (they still take memory).
        self._in_flight = 0
        #: The batch being written, and the bytes written to the file since the sink took it
        #: (``position``: where lines land).
        self._batch: list[str] = []
        self._written = 0
        self._origin = _file_origin(stream)
        # guards _lines, _encoded, _fresh, _in_flight, _batch, _failure, _refused, _thread,
        # _closed, _steady
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # notified when a batch is written
        self._writing = threading.Lock()  # one batch at a time, in the order taken
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        #: The writer runs and nothing failed: an entry only has to be appended.
        self._steady = False
        #: Why writing stopped, if it did.
        self.error: OSError | None = None
        self._failure: OSError | None = None  # not yet raised to the caller
        #: Why the writer left an entry out (it has no JSON line), not yet raised.
        self._refused: Exception | None = None

    def write_entry(self, entry: Entry | list[Any]) -> None:
        # (an entry, or a row of its field values that no one changes any more: the journal's)
        with self._lock:
            if self._steady:
                fresh = self._fresh
                if (
                    self._encoded + len(fresh) + self._in_flight >= self.max_lines
                    and self.full_wait
                ):
                    self._wake.set()
                    self._room.wait(self.full_wait)  # kept all the same if no room came
                    fresh = self._fresh  # a flush may have taken them meanwhile
                fresh.append(entry)  # a completed entry does not change: encoded later
                if len(fresh) < ENCODE_LINES:
                    return
                refused = self._encode_fresh()
                if self._encoded >= BATCH_LINES:
                    self._wake.set()
                failure, closed = None, False
            else:
                failure, self._failure = self._failure, None
                refused, self._refused = self._refused, None
                if self.error is None:
                    self._fresh.append(entry)
                closed = self._closed
                if self._thread is None and not closed:
                    self._start()
                elif failure is None and self.error is None and not closed:
                    self._steady = True  # only an entry was refused: the writer goes on
        if failure is not None:
            raise failure
        if refused is not None:
            raise refused
        if closed:
            self.flush()  # after close(), lines go straight through

    def _encode_fresh(self) -> Exception | None:
        """Encode the entries taken since the last time (called under the lock). Returns why
        an entry was left out, if one was."""
        fresh = self._fresh
        if not fresh:
            return None
        self._fresh = []
        text, refused = _encoded(fresh)
        self._lines.append(text)
        self._encoded += len(fresh)
        return refused

    def flush(self) -> None:
        with self._writing:
            with self._lock:
                refused = self._encode_fresh()
                lines, self._lines = self._lines, []
                failure, self._failure = self._failure, None
                if refused is None:
                    refused = self._refused
                self._refused = None
                self._in_flight, self._encoded = self._encoded, 0
                self._batch = lines
            written = 0
            try:
                if failure is not None:
                    raise failure
                if lines and self.error is None:
                    text = "".join(lines)
                    try:
                        self.stream.write(text)
                        self.stream.flush()
                    except OSError as exc:
                        self.error = exc
                        raise
                    written = _encoded_size(text)
                if refused is not None:
                    raise refused
            finally:
                with self._lock:
                    self._in_flight = 0
                    self._batch = []
                    self._written += written
                    if self.error is not None:
                        self._steady = False
                    self._room.notify_all()

    def position(self) -> int | None:
        """The byte offset in the file at which the next line taken will start: the file's
        size when the sink took it, plus every line written, being written or waiting, in
        bytes of UTF-8. None when that cannot be told: not a regular file written at its end in
        UTF-8, or a write failed. Costs a pass over the lines waiting (a run starting, not a
        request)."""
        with self._lock:
            if self._origin is None or self.error is not None or self._failure is not None:
                return None
            refused = self._encode_fresh()
            if refused is not None and self._refused is None:
                self._refused = refused  # raised by the next call
                self._steady = False
            waiting = "".join(self._batch) + "".join(self._lines)
            return self._origin[2] + self._written + _encoded_size(waiting)

    def written_end(self) -> int | None:
        """The byte offset just past the last line written, if the file at ``name`` is still
        the one the sink took and holds exactly what was there then plus what the sink wrote
        (no other writer, not truncated, not replaced); else None. Waits for a batch being
        written."""
        with self._writing:
            with self._lock:
                if self.error is not None:
                    return None
                written = self._written
            return _checked_end(self.name, self._origin, written)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._steady = False
            self._room.notify_all()
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join()
        with _OPEN_LOCK:
            _OPEN_SINKS.discard(self)
        self.flush()

    def _start(self) -> None:
        """Called under the lock."""
        self._thread = threading.Thread(
            target=self._run, name="fakeprovider journal writer", daemon=True
        )
        with _OPEN_LOCK:
            _OPEN_SINKS.add(self)
        self._thread.start()
        self._steady = True

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self.interval)
            self._wake.clear()
            try:
                self.flush()
            except OSError as exc:
                with self._lock:
                    self._failure = exc  # raised to the journal by its next call
                    self._steady = False
                return
            except (TypeError, ValueError, RecursionError) as exc:  # an entry with no line
                with self._lock:
                    self._refused = self._refused or exc  # raised by the next call
                    self._steady = False  # so that the next write_entry looks

    def __enter__(self) -> BatchedSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _encoded(entries: list[Entry | list[Any]]) -> tuple[str, Exception | None]:
    """The lines of ``entries`` (``jsonl_lines``; rows too), leaving out any entry that has
    none, and the error ``jsonl_line`` raised for the first such entry (else None)."""
    try:
        return _rows_lines(entries), None
    except (TypeError, ValueError, RecursionError) as exc:
        refused: Exception = exc
    lines = []
    for entry in _as_entries(entries):
        try:
            lines.append(jsonl_line(entry))
        except (TypeError, ValueError, RecursionError):
            continue
    return "".join(lines), refused


@atexit.register
def _flush_open_sinks() -> None:
    with _OPEN_LOCK:
        sinks = list(_OPEN_SINKS)
    for sink in sinks:
        with contextlib.suppress(OSError, ValueError):  # ValueError: the stream was closed
            sink.flush()


#: ``Journal.complete``'s default for a field it was not given: the entry keeps its value.
_KEPT: Any = object()


class Journal(Sequence[Entry]):
    """An append-only, thread-safe list of entries with an optional JSONL sink.

    An entry is appended when its request is received and completed (then kept in the store and
    written to the sink) when its answer has gone out. ``clear()`` starts a new run: the entries
    of requests still in flight leave the list but are still completed and written when their
    answers go out (they belong to the run they started in). ``memory`` keeps only the last
    that many completed entries in memory (the sink still gets every one); ``store`` keeps them
    elsewhere (``JournalStore``; ``memory`` is for the default ``MemoryStore``).

    ``sink`` is a stream (each line written and flushed as it comes: ``StreamSink``) or a
    ``JournalSink`` such as ``BatchedSink`` (lines written by a thread; ``flush()`` before
    reading the file, ``close()`` when done). A sink that fails to write is reported once to
    the ``fakeprovider.server`` logger and written no more (``sink_error`` says why); requests
    are answered and kept in memory as before.
    """

    def __init__(
        self,
        sink: IO[str] | JournalSink | None = None,
        *,
        memory: int | None = None,
        store: JournalStore | None = None,
        listener: Callable[[Entry], None] | None = None,
    ) -> None:
        if memory is not None and memory < 1:
            raise ValueError(f"memory must be at least 1 entry, got {memory}")
        self.memory = memory
        self.store: JournalStore = store if store is not None else MemoryStore(memory)
        self.sink: JournalSink | None = None if sink is None else _as_sink(sink)
        #: Entries received but not completed, by seq, whether of the current run or not: an
        #: ``Entry``, or a row (``append_values``: the list of its field values).
        self._pending: dict[int, Entry | list[Any]] = {}
        self._lock = threading.Lock()
        #: The sequence numbers still to give out. ``next_seq`` is its ``__next__``: one C
        #: call, atomic under the GIL, where a locked method cost some 3,000 instructions a
        #: request (``_seq_ahead`` reads which number comes next without taking it).
        self._seqs = itertools.count(1)
        self.next_seq: Callable[[], int] = self._seqs.__next__  # type: ignore[method-assign]
        #: The first seq of the current run (entries from before the last ``clear()`` are older).
        self._run_start = 1
        #: Why the sink stopped being written, if it did.
        self.sink_error: OSError | None = None
        #: The run header written to the sink when the current run started without an admin
        #: request (a server start, ``FakeProvider.reset()``); not one of the entries.
        self.header: Entry | None = None
        #: Called with every entry as it is written (``serve --log-requests``); must not raise.
        self.listener = listener
        #: The sink, and the byte offset in its file at which the current run's lines start,
        #: when the sink can tell (``run_entries`` reads from there).
        self._run_mark: tuple[JournalSink, int] | None = _mark(self.sink)

    @property
    def forgotten(self) -> int:
        """Entries of the current run no longer in memory (``memory`` was reached)."""
        return self.store.forgotten

    def next_seq(self) -> int:
        """The sequence number of the next entry, taken (each is given out once, in order).

        (The instance's ``next_seq`` is its counter's ``__next__``, this method's equal.)"""
        return next(self._seqs)

    def append(self, entry: Entry) -> Entry:
        with self._lock:
            if entry.completed_at is None:
                self._pending[entry.seq] = entry
            else:
                self.store.add(entry)
                self._write(entry)
        return entry

    def append_values(self, values: list[Any]) -> None:
        """Append the entry of a request in flight given as its field values, in
        ``FIELD_NAMES`` order (``completed_at`` None): ``append(Entry(*values))``, except that
        the journal keeps the list itself (it must not be changed afterwards), fills it in when
        the answer goes out (``finish``, ``complete``) and makes the ``Entry`` only when one is
        read. The engine journals its usual requests so: the list costs a few hundred
        instructions where an ``Entry`` costs some 5,000, and its values are what the lines
        and the ``MemoryStore`` read."""
        with self._lock:
            self._pending[values[0]] = values

    def finish(
        self, seq: int, response_started_at: Any, completed_at: Any, status_code: Any
    ) -> None:
        """``complete(seq, response_started_at=..., completed_at=..., status_code=...)``
        without making an ``Entry`` to return: what an adapter calls once an answer has gone
        out whole (an entry given by ``append_values`` is kept and written as its row)."""
        with self._lock:
            entry = self._pending.pop(seq, None)
            if entry is None:
                return
            if isinstance(entry, Entry):
                _set_response_started_at(entry, response_started_at)
                _set_completed_at(entry, completed_at)
                _set_status_code(entry, status_code)
                self._completed(seq, entry)
                return
            entry[7] = response_started_at
            entry[8] = completed_at
            entry[9] = status_code
            if seq >= self._run_start:
                store = self.store
                if store.__class__ is MemoryStore:
                    young = store._young
                    if store.limit is None and store._packing is None and len(young) < _CHUNK - 1:
                        young.append(entry)  # what ``MemoryStore.add`` does, one call less
                        store._size += 1
                    else:
                        store.add(entry)
                else:
                    store.add(Entry(*entry))
            sink = self.sink
            if sink is None or self.listener is not None or self.sink_error is not None:
                if sink is not None or self.listener is not None:
                    self._write(Entry(*entry))
            elif sink.__class__ is BatchedSink:
                try:
                    sink.write_entry(entry)
                except OSError as exc:
                    self._sink_failed(sink, exc)
            else:
                try:
                    sink.write_entry(Entry(*entry))
                except OSError as exc:
                    self._sink_failed(sink, exc)

    def complete(
        self,
        seq: int,
        *,
        response_started_at: Any = _KEPT,
        completed_at: Any = _KEPT,
        status_code: Any = _KEPT,
        **changes: Any,
    ) -> Entry | None:
        """Fill in the response side of entry ``seq`` (times, status code, and any other field
        named in ``changes``) and write it out; a field not named keeps its value.

        Works for an entry a ``clear()`` took out of the list too (a request in flight across
        a reset). Returns None when no entry ``seq`` is waiting to be completed.
        """
        with self._lock:
            entry = self._pending.pop(seq, None)
            if entry is None:
                return None
            if not isinstance(entry, Entry):  # given by ``append_values``: made an entry now
                entry = Entry(*entry)
            # Completed in place: the entry stood for a request in flight until now.
            # (dataclasses.replace would cost more than the rest of a request.) The three
            # fields every answer fills in go through their slots' own setters: a third of
            # the instructions of object.__setattr__ by name.
            if response_started_at is not _KEPT:
                _set_response_started_at(entry, response_started_at)
            if completed_at is not _KEPT:
                _set_completed_at(entry, completed_at)
            if status_code is not _KEPT:
                _set_status_code(entry, status_code)
            for name, value in changes.items():
                _fill(entry, name, value)
            self._completed(seq, entry)
            return entry

    def _completed(self, seq: int, entry: Entry) -> None:
        """Keep ``entry``, just completed, and write it (called under the lock)."""
        if seq >= self._run_start:
            self.store.add(entry)
        sink = self.sink
        if sink is None or self.listener is not None or self.sink_error is not None:
            self._write(entry)
            return
        try:  # what _write does, one call less
            sink.write_entry(entry)
        except OSError as exc:
            self._sink_failed(sink, exc)

    def clear(self) -> None:
        """Start a new run: forget every entry (sequence numbers go on, so a JSONL file stays
        unambiguous). Entries still in flight are written to the sink when they complete."""
        with self._lock:
            self.store.clear()
            self._run_start = _seq_ahead(self._seqs)
            self.header = None
            self._run_mark = None if self.sink_error is not None else _mark(self.sink)

    def attach(self, sink: IO[str] | JournalSink) -> None:
        """Write to ``sink`` from now on, starting with the current run's header (if any).

        Raises ``OSError`` when ``sink`` cannot take the header (it is closed then): a journal
        that cannot be written is refused before anything is served.
        """
        journal_sink = _as_sink(sink)
        with self._lock:
            mark = _mark(journal_sink)
            if self.header is not None:
                try:
                    journal_sink.write_entry(self.header)
                    journal_sink.flush()
                except OSError:
                    with contextlib.suppress(OSError):
                        journal_sink.close()
                    raise
            self.sink = journal_sink
            self.sink_error = None
            self._run_mark = mark

    def start_run(self, header: Entry) -> None:
        """Write ``header`` (a run header) to the sink; ``to_jsonl`` starts with it."""
        with self._lock:
            self.header = header
            self._write(header)

    def flush(self) -> None:
        """Have the sink write out every entry completed so far (``BatchedSink`` holds some)."""
        self._with_sink(lambda sink: sink.flush())

    def close(self) -> None:
        """Flush and close the sink (``BatchedSink`` stops its thread); entries completed later
        are still written, straight through."""
        self._with_sink(lambda sink: sink.close())

    def _with_sink(self, call: Callable[[JournalSink], None]) -> None:
        sink = self.sink
        if sink is None or self.sink_error is not None:
            return
        try:
            call(sink)
        except OSError as exc:
            with self._lock:
                self._sink_failed(sink, exc)

    def run_entries(self) -> list[Entry]:
        """Every entry of the current run, sorted by ``seq``: from memory, or, when ``memory``
        made it forget some, from the sink's file (plus the entries still in flight). Reads a
        file, so call it off the event loop.

        The file is read from where the current run's first line went in (the sink counts the
        bytes it writes) when that can be trusted: the same file is still at the sink's name,
        holding exactly what was there when the sink took it plus what the sink wrote, and a
        line starts there. Otherwise (another writer, truncated, replaced, a sink that cannot
        count) the whole file is read, as it always was.
        """
        listed = self.snapshot()
        with self._lock:
            if not self.store.forgotten or self.sink is None or self.sink_error is not None:
                return listed
            start = self._run_start
            sink = self.sink
            path = sink.name
            mark = self._run_mark
        if path is None or not Path(path).is_file():
            return listed
        self.flush()
        offset = 0
        if mark is not None and mark[0] is sink and _starts_line(path, mark[1], sink):
            offset = mark[1]
        found: dict[int, Entry] = {}
        with open(path, encoding="utf-8") as handle:
            if offset:
                handle.seek(offset)  # a byte offset at a line's start: a fresh decoder
            while lines := handle.readlines(_BLOCK):
                whole = lines[-1].endswith("\n")
                if not whole:
                    lines.pop()  # a line being written right now: the end
                # lines not entries are not ours (the file may hold anything before this
                # server's lines): skipped
                for entry in readable_entries(lines):
                    if entry.seq >= start:
                        found[entry.seq] = entry
                if not whole:
                    break
        for entry in listed:  # in flight (not written yet)
            found.setdefault(entry.seq, entry)
        return sorted(found.values(), key=_SEQ)

    def run_batches(self) -> RunFile | None:
        """The current run's entries as ``run_entries`` gives them but never all at once
        (``RunFile.batches``, as often as wanted, the same each time):
        for a run that ``memory`` made it forget part of, read from the sink's file a block
        (some 64 KiB) at a time. None when ``run_entries`` would not read the file from where
        the run starts (the run is all in memory, there is no file, a write failed, the file
        cannot be trusted): take ``run_entries()`` then. Reads a file, so iterate it off the
        event loop.

        The entries come as the file holds them, in the order their answers went out, not
        sorted: ``_stream.in_seq_order_batches(..., after=RunFile.first - 1)`` puts them in
        order.
        What the file holds is read up to where its lines stood at the call; an entry then
        still in flight comes, as it was then, in the block where its seq falls (or last).
        Lines that are not entries are skipped, as ``run_entries`` skips them."""
        with self._lock:
            sink = self.sink
            mark = self._run_mark
            if (
                not self.store.forgotten
                or sink is None
                or self.sink_error is not None
                or mark is None
                or mark[0] is not sink
                or sink.name is None
            ):
                return None
            start = self._run_start
            live = _as_entries(self._pending.values())  # as they are now
            position = getattr(sink, "position", None)
            end = position() if callable(position) else None
        if not isinstance(end, int) or end < mark[1]:
            return None
        self.flush()  # the lines counted in ``end`` onto the file
        written_end = getattr(sink, "written_end", None)
        written = written_end() if callable(written_end) else None
        if (
            self.sink_error is not None
            or not isinstance(written, int)
            or written < end
            or not _starts_line(sink.name, mark[1], sink)
        ):
            return None
        waiting = sorted((e for e in live if e.seq >= start), key=_SEQ)
        return RunFile(sink.name, mark[1], end, start, tuple(waiting))

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
            sink.write_entry(entry)
        except OSError as exc:
            self._sink_failed(sink, exc)

    def _sink_failed(self, sink: JournalSink, exc: OSError) -> None:
        """Called under the lock."""
        if self.sink_error is None:
            self.sink_error = exc
            _report_failure(sink, exc)

    # -- list-like ------------------------------------------------------------------------

    def snapshot(self) -> list[Entry]:
        with self._lock:
            start = self._run_start
            live = _as_entries(self._pending.values())  # a row's entry made as it is now
            kept = self.store.entries()
        live = [e for e in live if e.seq >= start]
        entries = [*kept, *live]
        entries.sort(key=_SEQ)
        return entries

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        return self.snapshot()[index]

    def __len__(self) -> int:
        with self._lock:
            start = self._run_start
            return len(self.store) + sum(1 for seq in self._pending if seq >= start)

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
        return jsonl_lines(entries)

    def __repr__(self) -> str:
        return f"<Journal {len(self)} entries>"

    __hash__ = None  # type: ignore[assignment]


_SEQ = operator.attrgetter("seq")


def _seq_ahead(seqs: itertools.count[int]) -> int:
    """The number ``next(seqs)`` gives next, without taking it (``count(5)`` -> 5)."""
    return int(repr(seqs)[6:-1])


#: Sets a field of a frozen entry (``Journal.complete`` fills in an entry in flight).
_fill = object.__setattr__
#: The setters of the slots every answer fills in (``Journal.complete``).
_set_response_started_at: Callable[[Entry, Any], None] = vars(Entry)["response_started_at"].__set__
_set_completed_at: Callable[[Entry, Any], None] = vars(Entry)["completed_at"].__set__
_set_status_code: Callable[[Entry, Any], None] = vars(Entry)["status_code"].__set__


def _mark(sink: JournalSink | None) -> tuple[JournalSink, int] | None:
    """``sink`` and where in its file its next line will start, if it can tell (a sink of
    another kind may not: then ``run_entries`` reads the whole file)."""
    position = getattr(sink, "position", None)
    at = position() if callable(position) else None
    return None if sink is None or not isinstance(at, int) else (sink, at)


def _starts_line(path: str, offset: int, sink: JournalSink) -> bool:
    """Whether reading ``path`` from ``offset`` gives what ``sink`` wrote from there: the file
    is still the sink's alone up to its last line, and a line starts at ``offset``."""
    written_end = getattr(sink, "written_end", None)
    end = written_end() if callable(written_end) else None
    if not isinstance(end, int) or not 0 <= offset <= end:
        return False
    if offset == 0:
        return True
    try:
        with open(path, "rb") as handle:
            handle.seek(offset - 1)
            return handle.read(1) == b"\n"
    except OSError:
        return False


@dataclasses.dataclass(frozen=True)
class RunFile:
    """A run as ``Journal.run_batches`` found it in the sink's file: the bytes ``offset`` to
    ``end`` of the file at ``path`` (appended to since, never changed), its first seq, and the
    entries then in flight (sorted by seq)."""

    path: str
    offset: int
    end: int
    first: int
    waiting: tuple[Entry, ...]

    def batches(self) -> Iterator[list[Entry]]:
        """The entries of seq ``first`` on that those bytes hold (lines that are not entries,
        or not UTF-8, skipped), a block of lines at a time, each of ``waiting`` added to the
        first block that holds a higher seq, the rest after the last."""
        return _run_blocks(self.path, self.offset, self.end, self.first, self.waiting)


def _run_blocks(
    path: str, offset: int, end: int, start: int, waiting: tuple[Entry, ...]
) -> Iterator[list[Entry]]:
    at = 0
    with open(path, "rb") as handle:
        handle.seek(offset)
        rest = b""
        for data in _blocks(handle, end - offset):
            cut = data.rfind(b"\n") + 1
            if not cut:
                rest += data
                continue
            lines = (rest + data[:cut]).split(b"\n")
            rest = data[cut:]
            lines.pop()  # the empty bytes after the last line break
            batch = [e for e in readable_entries(lines) if e.seq >= start]
            if at < len(waiting) and batch:
                top = max(map(_SEQ, batch))
                while at < len(waiting) and waiting[at].seq < top:
                    batch.append(waiting[at])
                    at += 1
            if batch:
                yield batch
    if at < len(waiting):
        yield list(waiting[at:])


def _as_sink(sink: IO[str] | JournalSink) -> JournalSink:
    return sink if isinstance(sink, JournalSink) else StreamSink(sink)


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


def iter_journal(
    source: str | Path | IO[str] | IO[bytes],
    *,
    share_strings: bool = False,
    limit: int | None = None,
    name: str | None = None,
) -> Iterator[Entry]:
    """Entries from a JSONL file (or open text or binary stream) one at a time, in file order,
    run headers included: what ``read_journal`` sorts, without holding more than a block of
    the file (``_BLOCK`` bytes) and its entries. A path is opened when iteration starts and
    closed when it ends (or when the iterator is closed). ``share_strings`` holds equal strings
    once between entries (``iter_entries``), for a reader that keeps many of them. ``limit``:
    read only the first that many bytes of a path (what it held at some moment, while a server
    may go on appending to it). ``name``: what errors call the source (else its path, or the
    stream's name).

    A path or a binary stream is read in blocks (``entry_batches``: msgspec takes thousands of
    lines at once), a text stream line by line (``iter_entries``); the entries and errors are
    the same either way.

    Raises ``ValueError`` (``JournalError``) as ``FILE:LINE: field: what was expected`` when it
    reaches the first line that is not an entry, after yielding every entry before it.
    """
    if isinstance(source, (str, Path)):
        with open(source, "rb") as handle:
            batches = entry_batches(
                _blocks(handle, limit), name or str(source), share_strings=share_strings
            )
            for batch in batches:
                yield from batch
        return
    name = name or str(getattr(source, "name", "<journal>"))
    read = getattr(source, "read", None)
    if callable(read) and isinstance(read(0), bytes):
        for batch in entry_batches(_blocks(source, None), name, share_strings=share_strings):
            yield from batch
        return
    yield from iter_entries(source, name, share_strings=share_strings)


def iter_records(
    source: str | Path | IO[str] | IO[bytes], *, limit: int | None = None
) -> Iterator[EntryLike]:
    """``iter_journal`` for a reader that only reads what entries hold and tell (their fields
    and ``failed``, ``latency``, ``is_header``): the same lines, values, order and errors,
    but each line of the fake's shape in a path or binary stream is given as the struct msgspec
    decoded it into (``entries.record_batches``), not as an ``Entry``: about half the cost of
    a line. ``entries.as_entry`` makes the ``Entry`` of one."""
    return itertools.chain.from_iterable(iter_record_batches(source, limit=limit))


def iter_record_batches(
    source: str | Path | IO[str] | IO[bytes],
    *,
    limit: int | None = None,
    name: str | None = None,
) -> Iterator[list[EntryLike]]:
    """``iter_records`` in the lists it reads them in (a block of the file at a time, some of
    them empty): what ``fakeprovider check`` streams a file with, a list at a time. A bad line's
    ``JournalError`` is raised after a list of the entries before it, naming the source as
    ``iter_journal`` does."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as handle:
            yield from record_batches(_blocks(handle, limit), name or str(source))
        return
    name = name or str(getattr(source, "name", "<journal>"))
    read = getattr(source, "read", None)
    if callable(read) and isinstance(read(0), bytes):
        yield from record_batches(_blocks(source, None), name)
        return
    for entry in iter_entries(source, name, share_strings=False):
        yield [entry]


#: How many bytes ``iter_journal`` reads at a time (about 120 lines of the fake's: a block, its
#: lines and their entries stay in the CPU's cache; 1 MiB blocks cost about 10% more a line).
_BLOCK = 1 << 16


def _blocks(handle: IO[Any], limit: int | None) -> Iterator[bytes]:
    """The bytes of ``handle`` in blocks of at most ``_BLOCK`` (``limit``: its first that many
    bytes only). A stream that can (a file, a pipe) hands over what it has at each read
    (``read1``) rather than waiting for a whole block."""
    read = getattr(handle, "read1", None) or handle.read
    left = limit
    while left is None or left > 0:
        block = read(_BLOCK if left is None else min(_BLOCK, left))
        if not block:
            return
        if left is not None:
            left -= len(block)
        yield block


def read_journal(
    source: str | Path | IO[str] | IO[bytes], *, name: str | None = None
) -> list[Entry]:
    """Entries from a JSONL file (or open text or binary stream), sorted by ``seq``
    (``order_entries``). The file is read in blocks (``iter_journal``).

    Raises ``ValueError`` as ``FILE:LINE: field: what was expected`` for the first line that
    is not an entry (not UTF-8, not JSON, a field missing or of the wrong type); ``FILE`` is
    ``name``, else the path or the stream's name.
    """
    with paused_gc():
        return order_entries(iter_journal(source, share_strings=True, name=name))
