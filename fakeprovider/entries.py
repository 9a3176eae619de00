"""Journal entries: the record of one request (``Entry``, ``RetryAfterRecord``, ``KINDS``), its
JSONL line, and the way back from a line, checked field by field before the checker sees it.

``entry_from_dict`` turns one decoded JSON object into an ``Entry`` or raises ``BadEntry``
naming the field and what it expected; ``parse_lines`` does it for a whole JSONL stream and
raises ``JournalError`` as ``FILE:LINE: field: what was expected``. A journal the fake wrote
always passes; a hand-edited, truncated or foreign one is refused with a message instead of
crashing a rule later (``"retry_after": 5``, ``"received_at": "x"``, NaN, binary).

``fakeprovider.journal`` (the journal itself: stores, sinks, reading files) builds on this
module and re-exports its public names.
"""

from __future__ import annotations

import contextlib
import copyreg
import dataclasses
import functools
import inspect
import itertools
import json
import math
import operator
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "FIELD_NAMES",
    "KINDS",
    "BadEntry",
    "Entry",
    "EntryLike",
    "JournalError",
    "Kind",
    "RetryAfterLike",
    "RetryAfterRecord",
    "as_entry",
    "entry_batches",
    "entry_from_dict",
    "entry_from_line",
    "field_values",
    "iter_entries",
    "jsonl_line",
    "jsonl_lines",
    "parse_lines",
    "readable_entries",
    "record_batches",
]

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
        out = dict(zip(FIELD_NAMES, field_values(self), strict=True))
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

    def __reduce__(self) -> tuple[Any, ...]:
        # ``Entry(*values)``: ``Entry.__new__`` makes the entry from its fields (``_fast_new``);
        # a dataclass subclass as a dataclass pickles (``__getstate__``, ``__setstate__``)
        cls = type(self)
        if cls is Entry or _no_init_of_its_own(cls):
            return cls, field_values(self)
        return copyreg.__newobj__, (cls,), self.__getstate__()  # type: ignore[attr-defined]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # a subclass is made as a dataclass's instance is (``_subclass_new``), not by
        # ``Entry.__new__``, which makes an ``Entry`` of ``Entry``'s fields
        super(Entry, cls).__init_subclass__(**kwargs)
        cls.__new__ = staticmethod(_subclass_new)  # type: ignore[assignment]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        """The entry a decoded journal line stands for.

        Raises ``ValueError`` naming the field and what it expected.
        """
        return entry_from_dict(data)


FIELD_NAMES = tuple(f.name for f in dataclasses.fields(Entry))


def _no_init_of_its_own(cls: type[Entry]) -> bool:
    """Whether ``cls`` (``Entry`` or a subclass) has no ``__init__`` but ``Entry``'s, which is
    ``object.__init__`` (``Entry.__new__`` makes the entry)."""
    init: object = cls.__init__
    return init is object.__init__


def _subclass_new(cls: type[Entry], *args: Any, **kwargs: Any) -> Entry:
    """``__new__`` of a subclass of ``Entry``: an instance for its own ``__init__`` to fill,
    or, when it has none, filled in by the dataclass's ``__init__`` of ``Entry``."""
    entry = object.__new__(cls)
    if _no_init_of_its_own(cls):
        _DATACLASS_INIT(entry, *args, **kwargs)
    return entry


class RetryAfterLike(Protocol):
    """What a ``RetryAfterRecord`` holds, read-only: the record itself, or the struct a
    journal read by ``record_batches`` holds in its place."""

    @property
    def raw(self) -> str: ...
    @property
    def not_before(self) -> float | None: ...
    @property
    def header(self) -> str: ...
    @property
    def form(self) -> str: ...


class EntryLike(Protocol):
    """What an ``Entry`` holds and tells, read-only: an ``Entry``, or the record a journal line
    is decoded into by ``record_batches`` (a msgspec struct with the same field names, values
    and properties; ``retry_after`` a ``RetryAfterLike``). Not an ``Entry`` for ``==``, hashing,
    ``dataclasses.replace`` or ``to_dict``: ``as_entry`` makes the ``Entry``."""

    @property
    def seq(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def job_id(self) -> str | None: ...
    @property
    def method(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def client(self) -> str: ...
    @property
    def received_at(self) -> float: ...
    @property
    def response_started_at(self) -> float | None: ...
    @property
    def completed_at(self) -> float | None: ...
    @property
    def status_code(self) -> int | None: ...
    @property
    def job_status(self) -> str | None: ...
    @property
    def retry_after(self) -> RetryAfterLike | None: ...
    @property
    def fault(self) -> str | None: ...
    @property
    def true_status(self) -> str | None: ...
    @property
    def status_since(self) -> float | None: ...
    @property
    def poll_after(self) -> float | None: ...
    @property
    def error_code(self) -> str | None: ...
    @property
    def credential(self) -> str | None: ...
    @property
    def idempotency_key(self) -> str | None: ...
    @property
    def request_digest(self) -> str | None: ...
    @property
    def dropped(self) -> str | None: ...
    @property
    def event(self) -> str | None: ...
    @property
    def webhook_id(self) -> str | None: ...
    @property
    def attempt(self) -> int | None: ...
    @property
    def delivery(self) -> str | None: ...
    @property
    def listed(self) -> tuple[tuple[str, str], ...] | None: ...
    @property
    def run(self) -> dict[str, Any] | None: ...
    @property
    def inline_result(self) -> bool | None: ...
    @property
    def is_header(self) -> bool: ...
    @property
    def latency(self) -> float | None: ...
    @property
    def failed(self) -> bool: ...


def as_entry(entry: EntryLike) -> Entry:
    """The ``Entry`` that ``entry`` stands for: itself if it is one, else an ``Entry`` of its
    values (what the line it was read from reads as)."""
    if isinstance(entry, Entry):
        return entry
    values = [getattr(entry, name) for name in FIELD_NAMES]
    ra = entry.retry_after
    if ra is not None:
        values[FIELD_NAMES.index("retry_after")] = RetryAfterRecord(
            ra.raw, ra.not_before, ra.header, ra.form
        )
    return Entry(*values)


def _values_functions() -> tuple[Callable[[Entry], tuple[Any, ...]], Callable[..., list[Any]]]:
    """``field_values`` and ``_flat_values``, made as source and compiled (as dataclasses
    makes ``__init__``): an attribute read in Python code is specialised to the slot by the
    interpreter, some twice as fast as ``operator.attrgetter``'s generic look-up, and these run
    for every entry written or packed."""
    values = "(" + "".join(f"entry.{name}, " for name in FIELD_NAMES) + ")"
    source = (
        f"def field_values(entry):\n    return {values}\n"
        "def flat_values(entries):\n"
        "    out = []\n"
        "    extend = out.extend\n"
        "    for entry in entries:\n"
        "        if entry.__class__ is list:\n"
        "            extend(entry)\n"
        "        else:\n"
        f"            extend({values})\n"
        "    return out\n"
    )
    scope: dict[str, Any] = {}
    exec(source, scope)  # only field names go into the source
    return scope["field_values"], scope["flat_values"]


#: An entry's field values, in ``FIELD_NAMES`` order (what ``attrgetter(*FIELD_NAMES)`` gives).
#: ``_flat_values(entries)``: every value of every entry in one list, entry after entry (an
#: entry may be given as a row: the list of its field values, which the journal keeps for the
#: entries the engine makes, ``Journal.append_values``).
field_values, _flat_values = _values_functions()


def _as_entries(items: Iterable[Entry | list[Any]]) -> list[Entry]:
    """``items`` as entries: a row (the list of an entry's field values) made into its entry."""
    return [Entry(*item) if item.__class__ is list else item for item in items]  # type: ignore[misc]


#: One encoder for every line (``json.dumps`` with options makes a new one per call).
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


def _fast_new() -> Callable[..., Entry]:
    """``Entry.__new__``, which makes the whole entry (``Entry.__init__`` is then
    ``object.__init__``, which does nothing): the fields are set on an object of
    ``_EntryFields`` (the same slots, no frozen ``__setattr__``: a plain attribute store, which
    the interpreter specialises to the slot) whose class is then set to ``Entry``. The
    dataclass's ``__init__`` sets each field through ``object.__setattr__`` instead, a call
    per field: this takes about a third of its instructions, and an entry is made per request.
    Same parameters, defaults and errors as the dataclass's ``__init__`` (its errors are worded
    as that ``__init__``'s, under its name); ``test_entries_write`` checks that both make equal
    entries and refuse the same arguments alike."""
    fields = dataclasses.fields(Entry)
    params = ", ".join(
        f.name if f.default is dataclasses.MISSING else f"{f.name}=_default_{f.name}"
        for f in fields
    )
    body = "".join(f"    entry.{f.name} = {f.name}\n" for f in fields)
    scope: dict[str, Any] = {"new": object.__new__, "Fields": _EntryFields}
    for f in fields:
        scope[f"_default_{f.name}"] = f.default
    source = f"def __new__(cls, {params}):\n    entry = new(Fields)\n{body}"
    source += "    entry.__class__ = cls\n    return entry\n"
    exec(source, scope)  # as dataclasses makes theirs; only field names go into the source
    made: Callable[..., Entry] = scope["__new__"]
    made.__qualname__ = _DATACLASS_INIT.__qualname__  # "Entry.__init__", as errors name it
    made.__doc__ = _fast_new.__doc__
    return made


#: ``Entry``'s slots under a class without the frozen ``__setattr__`` (nor any method): what
#: ``Entry.__new__`` fills in, then makes an ``Entry`` by ``__class__`` assignment.
_EntryFields = type("_EntryFields", (), {"__slots__": Entry.__slots__, "__module__": __name__})
#: The ``__init__`` the dataclass made (kept for the tests that compare, and for subclasses).
_DATACLASS_INIT = Entry.__init__
Entry.__new__ = _fast_new()  # type: ignore[method-assign,assignment]
Entry.__init__ = object.__init__  # type: ignore[method-assign,assignment]


def _without_self(signature: inspect.Signature) -> inspect.Signature:
    return signature.replace(parameters=tuple(signature.parameters.values())[1:])


class _Signature:
    """What ``inspect.signature`` (``help``, IDEs) shows for ``Entry`` and its subclasses: the
    dataclass ``__init__``'s parameters, annotations and all, not the generated ``__new__``'s
    bare names; a subclass with an ``__init__`` of its own (a dataclass adding fields) shows
    that one's."""

    def __get__(self, instance: object, owner: type[Entry]) -> inspect.Signature:
        init: Callable[..., None] = owner.__init__
        if init is object.__init__:  # made by ``Entry.__new__`` or ``_subclass_new``
            return _ENTRY_SIGNATURE
        return _without_self(inspect.signature(init))


_ENTRY_SIGNATURE = _without_self(inspect.signature(_DATACLASS_INIT))
Entry.__signature__ = _Signature()  # type: ignore[attr-defined]


def _json_float(value: float) -> str:
    # what the encoder writes: repr for a finite float, NaN / Infinity / -Infinity otherwise
    return float.__repr__(value) if value - value == 0 else _ENCODE(value)


def _json_other(value: object) -> str:
    # the nested fields as ``to_dict`` has them, and anything unexpected as the encoder has it
    if isinstance(value, RetryAfterRecord):
        return _ENCODE(
            {
                "raw": value.raw,
                "not_before": value.not_before,
                "header": value.header,
                "form": value.form,
            }
        )
    if isinstance(value, tuple):  # ``listed``: job id -> status
        return _ENCODE(dict(value))
    return _ENCODE(value)


#: A string as the encoder writes it (``ensure_ascii``): the C function when there is one.
_json_str: Callable[[str], str] = json.encoder.encode_basestring_ascii
#: How each field's value is written, by its exact type (``_json_other`` for the rest).
_JSON_OF: dict[type, Callable[[Any], str]] = {
    int: int.__repr__,
    float: _json_float,
    bool: lambda value: "true" if value else "false",
}
#: A line with a ``%s`` for every field's JSON, in field order (the keys encoded once).
_LINE = "{" + ",".join(f"{_ENCODE(name)}:%s" for name in FIELD_NAMES) + "}\n"


def _json_value(value: object) -> str:
    """One field's value as ``_ENCODE(entry.to_dict())`` writes it."""
    if value is None:
        return "null"
    if type(value) is str:
        return _json_str(value)
    return _JSON_OF.get(type(value), _json_other)(value)


def _general_line(entry: Entry) -> str:
    """``jsonl_line`` field by field: what a line is, whatever the values (a ``_line_writer``
    writes the same, faster, for the values an entry usually holds)."""
    return _LINE % tuple(map(_json_value, field_values(entry)))


_NULL = type(None)


def _line_writer(types: tuple[type, ...]) -> Callable[[tuple[Any, ...]], str | None]:
    """A function that writes the line of an entry whose field values (``field_values``) have
    exactly ``types``: the keys and every null are in its template already, a string goes
    through the C encoder, an int or a finite float is written by ``%r`` (its ``repr``, which
    is what the encoder writes), anything else by ``_json_value``. It returns None for a
    non-finite float (the encoder writes NaN and Infinity, not ``repr``'s nan and inf), for
    ``_general_line`` to write. Made as source and compiled, as ``dataclasses`` makes
    ``__init__``, so that a line costs one call and no loop."""
    parts: list[str] = []
    args: list[str] = []
    floats: list[str] = []
    for index, (name, kind) in enumerate(zip(FIELD_NAMES, types, strict=True)):
        key = _ENCODE(name)
        value = f"v{index}"
        if kind is _NULL:
            parts.append(f"{key}:null")
            continue
        parts.append(f"{key}:%r" if kind is int or kind is float else f"{key}:%s")
        if kind is int:
            args.append(value)
        elif kind is float:
            args.append(value)
            floats.append(value)
        elif kind is str:
            args.append(f"text({value})")
        elif kind is bool:
            args.append(f"('true' if {value} else 'false')")
        else:
            args.append(f"other({value})")
    names = ", ".join(f"v{index}" for index in range(len(types)))
    source = f"def write(values):\n    {names}, = values\n"
    if floats:
        # a sum of finite floats is finite unless it overflows (then the general path too)
        source += f"    total = {' + '.join(floats)}\n    if total - total:\n        return None\n"
    source += f"    return template % ({''.join(arg + ', ' for arg in args)})\n"
    scope: dict[str, Any] = {
        "template": "{" + ",".join(parts) + "}\n",
        "text": _json_str,
        "other": _json_value,
    }
    exec(source, scope)  # as dataclasses makes theirs; only field indexes go into the source
    write: Callable[[tuple[Any, ...]], str | None] = scope["write"]
    return write


#: Line writers by the exact types of an entry's fields (a handful in a run; bounded all the
#: same, an entry made by hand can hold anything).
_WRITERS: dict[tuple[type, ...], Callable[[tuple[Any, ...]], str | None]] = {}
_MOST_WRITERS = 256


def jsonl_line(entry: Entry) -> str:
    """``entry`` as one JSONL line, newline included: what every sink writes.

    Byte for byte ``_ENCODE(entry.to_dict()) + "\\n"`` (``test_entries_write`` checks it over
    arbitrary entries), built without the dict by a writer made once per pattern of field
    types (``_line_writer``); this runs once per request.
    """
    values = field_values(entry)
    types = tuple(map(type, values))
    write = _WRITERS.get(types)
    if write is None:
        if len(_WRITERS) >= _MOST_WRITERS:
            _WRITERS.clear()
        write = _WRITERS[types] = _line_writer(types)
    return write(values) or _general_line(entry)


# -- many lines at once: msgspec where it writes what json.dumps writes ---------------------
#
# msgspec encodes an ``Entry`` (a dataclass) as json.dumps encodes its ``to_dict()``, field for
# field in the same order, except for values it writes otherwise: a non-ASCII character (raw
# UTF-8 where json.dumps writes ``\uXXXX``), DEL (raw where json.dumps escapes it), a float
# that is not finite (null where json.dumps writes NaN or Infinity) or whose repr is in
# exponent form (below 1e-4 or from 1e16 on: msgspec writes ``0.00001`` and ``1e16`` where
# repr writes ``1e-05`` and ``1e+16``), ``listed`` (pairs, which json.dumps gets as an
# object), dicts and subclasses of str, int and float (refused). ``jsonl_lines`` gives
# msgspec only the entries whose values cannot be any of those, checked a column at a time
# (in C, mostly), checks the bytes for the characters, and writes every other entry with
# ``jsonl_line``.

#: Values msgspec and json.dumps write alike (a string's characters checked in the output).
_PLAIN_TYPES = frozenset({type(None), str, int, bool})
_FLOAT_TYPES = frozenset({float, type(None)})
#: The floats whose repr is not in exponent form (and 0.0): msgspec writes them as repr does.
_LOWEST_PLAIN = 1e-4
_BEYOND_PLAIN = 1e16
_RETRY_AFTER_SLOT = FIELD_NAMES.index("retry_after")


@functools.cache
def _lines_encoder() -> Any:
    """msgspec's JSON encoder, or None where msgspec is not installed."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - the tests run both ways (monkeypatch)
        return None
    return msgspec.json.Encoder()


def _plain_float(value: float) -> bool:
    return value == 0 or _LOWEST_PLAIN <= abs(value) < _BEYOND_PLAIN


def _plain_floats(column: list[Any]) -> bool:
    """Whether every value of ``column`` (floats and Nones) is None or a ``_plain_float``."""
    floats = list(filter(None, column))  # zeros are plain, as None is
    if not floats:
        return True
    total = sum(floats)
    if total - total != 0:  # NaN or infinity, or an overflow of the sum (huge floats)
        return False
    # positive, the usual case (clock seconds); else one by one
    return (min(floats) >= _LOWEST_PLAIN and max(floats) < _BEYOND_PLAIN) or all(
        map(_plain_float, floats)
    )


def _plain_value(value: Any, slot: int) -> bool:
    """Whether msgspec writes ``value`` (field ``slot``'s) as ``jsonl_line`` does, but for
    the characters of its strings (checked in the output)."""
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return True
    if kind is float:
        return value - value == 0 and _plain_float(value)
    if kind is RetryAfterRecord and slot == _RETRY_AFTER_SLOT:
        at = value.not_before
        return (
            type(value.raw) is str
            and type(value.header) is str
            and type(value.form) is str
            and (at is None or (type(at) is float and at - at == 0 and _plain_float(at)))
        )
    return False


def _exact_rows(entries: list[Entry], flat: list[Any] | None = None) -> set[int]:
    """The indexes of ``entries`` to be written by ``jsonl_line``: those holding a value
    msgspec could write otherwise (but for characters). Looks a column at a time, in C but
    for the rows of a column that is not plain: a column of Nones, of strings, of one type or
    of floats in the plain range costs a few passes, whatever its length. ``flat``: the
    entries' ``_flat_values``, when the caller has it already."""
    width = len(FIELD_NAMES)
    if flat is None:
        flat = _flat_values(entries)
    rows: set[int] = set()
    for slot in range(width):
        column = flat[slot::width]
        if _plain_column(column):
            continue
        rows.update(index for index, value in enumerate(column) if not _plain_value(value, slot))
    return rows


def _plain_column(column: list[Any]) -> bool:
    """Whether every value of ``column`` is of a ``_PLAIN_TYPES`` type or a plain float (a
    subclass of str, refused by msgspec, passes: ``jsonl_lines`` then writes it by hand)."""
    count = len(column)
    first = column[0]
    if first is None and column.count(None) == count:
        return True
    if type(first) is str:
        try:
            "".join(column)  # every value a str (or a subclass)
        except TypeError:
            pass
        else:
            return True
    kinds = list(map(type, column))
    types = {type(first)} if kinds.count(type(first)) == count else set(kinds)
    return types <= _PLAIN_TYPES or (types <= _FLOAT_TYPES and _plain_floats(column))


_WIDTH = len(FIELD_NAMES)


@functools.cache
def _writing_struct() -> Any:
    """A msgspec struct of ``FIELD_NAMES`` in order, any value in each (the one ``jsonl_lines``
    encodes an entry's values in). Made only where msgspec is installed."""
    import msgspec

    # gc=False: made, encoded and dropped at once, never in a cycle
    return msgspec.defstruct("EntryLine", [(name, object) for name in FIELD_NAMES], gc=False)


def _plain_bytes(line: bytes) -> bool:
    """Whether msgspec's ``line`` is what json.dumps writes, characters-wise: ASCII (json.dumps
    escapes the rest) and no DEL (json.dumps escapes it; msgspec escapes the other controls
    alike)."""
    return line.isascii() and 0x7F not in line  # (a byte value: no TypeError made and dropped)


def _plain_text(data: bytes) -> str | None:
    """``data`` as text when ``_plain_bytes`` (decoded as ASCII, which checks it is), else None."""
    if 0x7F in data:
        return None
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return None


def jsonl_lines(entries: Iterable[Entry]) -> str:
    """``entries`` as JSONL: ``"".join(map(jsonl_line, entries))`` byte for byte
    (``test_entries_write`` checks it over arbitrary entries), in about a third of the time
    where msgspec is installed and the entries hold what the fake's entries hold: what a
    ``BatchedSink``'s writer writes at a time. msgspec is given each entry's values in a
    struct of the fields (``_writing_struct``), read off the flat list the checks use.

    Raises what ``jsonl_line`` raises for the first entry it cannot write (a value JSON has no
    form for).
    """
    return _rows_lines(entries if type(entries) is list else list(entries))


def _rows_lines(batch: list[Entry | list[Any]]) -> str:
    """``jsonl_lines`` of ``batch``, whose entries may be given as rows (the list of an
    entry's field values, in ``FIELD_NAMES`` order): a row's line is its entry's."""
    encoder = _lines_encoder()
    if encoder is None or not batch:
        return "".join(map(jsonl_line, _as_entries(batch)))
    flat = _flat_values(batch)
    exact = _exact_rows(batch, flat)  # type: ignore[arg-type]
    if not exact:
        # each entry's values in a struct of the fields in order (msgspec reads a struct's
        # slots directly, a dataclass's fields by name: half the instructions): the rows
        # themselves when every entry is one, else the columns of the flat list zipped
        struct = _writing_struct()
        if list(map(type, batch)).count(list) == len(batch):
            rows: Iterable[Any] = batch
        else:
            rows = zip(*[flat[slot::_WIDTH] for slot in range(_WIDTH)], strict=True)
        try:
            data = encoder.encode_lines(list(itertools.starmap(struct, rows)))
        except Exception:  # a lone surrogate, an int too long: one by one
            data = None
        if data is not None:
            text = _plain_text(data)
            if text is not None:
                return text
    encode = encoder.encode
    out: list[str] = []
    for index, entry in enumerate(_as_entries(batch)):
        if index not in exact:
            try:
                line = encode(entry)
            except Exception:  # jsonl_line writes it or raises the error
                line = None
            if line is not None and _plain_bytes(line):
                out.append(line.decode("ascii") + "\n")
                continue
        out.append(jsonl_line(entry))
    return "".join(out)


_NONE = type(None)
_NUMBER = (int, float)


class BadEntry(ValueError):
    """One field of one entry is wrong (``field`` is empty for the entry as a whole)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


class JournalError(ValueError):
    """A journal line that is not an entry: ``FILE:LINE: field: what was expected``."""

    def __init__(self, name: str, line: int, problem: str) -> None:
        super().__init__(f"{name}:{line}: {problem}")
        self.name = name
        self.line = line


def _finite(value: Any) -> bool:
    return type(value) is int or math.isfinite(value)


def _code(value: Any) -> bool:
    return bool(100 <= value <= 999)


def _not_negative(value: Any) -> bool:
    return bool(value >= 0)


_Check = Callable[[Any], bool]
#: field -> (JSON types allowed, a check of a non-null value, what was expected)
_FIELDS: dict[str, tuple[tuple[type, ...], _Check | None, str]] = {
    "seq": ((int,), _not_negative, "a whole number at least 0"),
    "kind": ((str,), KINDS.__contains__, "one of " + ", ".join(repr(k) for k in KINDS)),
    "job_id": ((str, _NONE), None, "a string or null"),
    "method": ((str,), None, "a string (the HTTP method)"),
    "path": ((str,), None, "a string (the request path)"),
    "client": ((str,), None, "a string (X-Client-Id or the peer address)"),
    "received_at": (_NUMBER, _finite, "a finite number (clock seconds)"),
    "response_started_at": ((*_NUMBER, _NONE), _finite, "a finite number (clock seconds) or null"),
    "completed_at": ((*_NUMBER, _NONE), _finite, "a finite number (clock seconds) or null"),
    "status_code": ((int, _NONE), _code, "an HTTP status code (100 to 999) or null"),
    "job_status": ((str, _NONE), None, "a string or null"),
    "retry_after": ((dict, _NONE), None, "an object with 'raw' and 'not_before', or null"),
    "fault": ((str, _NONE), None, "a string or null"),
    "true_status": ((str, _NONE), None, "a string or null"),
    "status_since": ((*_NUMBER, _NONE), _finite, "a finite number (clock seconds) or null"),
    "poll_after": ((*_NUMBER, _NONE), _finite, "a finite number of seconds or null"),
    "error_code": ((str, _NONE), None, "a string or null"),
    "credential": ((str, _NONE), None, "a string or null"),
    "idempotency_key": ((str, _NONE), None, "a string or null"),
    "request_digest": ((str, _NONE), None, "a string or null"),
    "dropped": ((str, _NONE), None, "a string or null"),
    "event": ((str, _NONE), None, "a string or null"),
    "webhook_id": ((str, _NONE), None, "a string or null"),
    "attempt": ((int, _NONE), _not_negative, "a whole number at least 0, or null"),
    "delivery": ((str, _NONE), None, "a string or null"),
    "listed": ((dict, _NONE), None, "an object of job id to status, or null"),
    "run": ((dict, _NONE), None, "an object (a run header) or null"),
    "inline_result": ((bool, _NONE), None, "true, false or null"),
}
_REQUIRED = ("seq", "kind", "method", "path", "client", "received_at")
_RETRY_AFTER: dict[str, tuple[tuple[type, ...], _Check | None, str]] = {
    "raw": ((str,), None, "a string (the header value sent)"),
    "not_before": ((*_NUMBER, _NONE), _finite, "a finite number (clock seconds) or null"),
    "header": ((str,), None, "a string (the header name)"),
    "form": ((str,), None, "a string (the form of the value)"),
}


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = json.dumps(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


#: Fields a null, or a string, always satisfies: most of an entry, skipped at a glance.
_NULLABLE = frozenset(name for name, (types, _, _) in _FIELDS.items() if _NONE in types)
_ANY_STRING = frozenset(
    name for name, (types, check, _) in _FIELDS.items() if str in types and check is None
)


def _checked(
    specs: dict[str, tuple[tuple[type, ...], _Check | None, str]],
    data: dict[str, Any],
    prefix: str,
    strings: dict[str, str] | None = None,
) -> None:
    """Check each field of ``data`` against ``specs``; with ``strings``, also replace each
    string value by the equal one in ``strings`` (adding it there first), so that a journal's
    thousands of equal job ids, paths and statuses are held once."""
    fast = specs is _FIELDS
    for name, value in data.items():
        if fast:
            if value is None:
                if name in _NULLABLE:
                    continue
            elif type(value) is str and name in _ANY_STRING:
                if strings is not None:
                    data[name] = strings.setdefault(value, value)
                continue
        spec = specs.get(name)
        if spec is None:
            raise BadEntry(f"{prefix}{name}", "not a journal field")
        types, check, expected = spec
        if type(value) not in types or (
            check is not None and value is not None and not check(value)
        ):
            raise BadEntry(f"{prefix}{name}", f"expected {expected}, got {_show(value)}")
        if strings is not None and type(value) is str:
            data[name] = strings.setdefault(value, value)


def entry_from_dict(data: Any) -> Entry:
    """The ``Entry`` a decoded journal line stands for; ``BadEntry`` names what is wrong."""
    if not isinstance(data, dict):
        raise BadEntry("", f"expected a JSON object (a journal entry), got {_show(data)}")
    return _entry(dict(data), None)


def _entry(data: dict[str, Any], strings: dict[str, str] | None) -> Entry:
    """``entry_from_dict`` for a dict of its own, which it changes (``_checked``)."""
    _checked(_FIELDS, data, "", strings)
    for name in _REQUIRED:
        if name not in data:
            listing = ", ".join(_REQUIRED[:-1]) + f" and {_REQUIRED[-1]}"
            raise BadEntry(name, f"missing; every entry has {listing}")
    if "job_id" not in data:
        data["job_id"] = None
    _finish(data, strings)
    return Entry(**data)


def _check_run(run: dict[str, Any]) -> None:
    scale = run.get("time_scale")
    if scale is not None and not (type(scale) in _NUMBER and 0 < scale < math.inf):
        raise BadEntry("run.time_scale", f"expected a positive number, got {_show(scale)}")
    if not isinstance(run.get("limits", {}), dict):
        raise BadEntry("run.limits", f"expected an object, got {_show(run['limits'])}")


def _finish(values: dict[str, Any], strings: dict[str, str] | None) -> None:
    """Check the nested fields of ``values`` (whose own fields passed) and turn them into what
    ``Entry`` holds: a ``RetryAfterRecord``, the ``listed`` pairs."""
    ra = values.get("retry_after")
    if ra is not None:
        _checked(_RETRY_AFTER, ra, "retry_after.", strings)
        for name in ("raw", "not_before"):
            if name not in ra:
                raise BadEntry(
                    f"retry_after.{name}", "missing; a Retry-After has raw and not_before"
                )
        values["retry_after"] = RetryAfterRecord(**ra)
    run = values.get("run")
    if run is not None:
        _check_run(run)
    listed = values.get("listed")
    if listed is not None:
        for job, status in listed.items():
            if not isinstance(status, str):
                raise BadEntry(
                    f"listed.{job}", f"expected a status (a string), got {_show(status)}"
                )
        values["listed"] = tuple(listed.items())


# -- the fast paths: a line of the shape the fake writes --------------------------------------
#
# The fake writes every field on every line. msgspec (where it is installed) decodes such a
# line straight into a struct of the line's schema, checking every type and range as it goes
# (``_line_decoder``): a line it accepts is one ``_entry`` accepts, with the same values. Any
# other line, and every line where msgspec is missing, is decoded by json.loads; a dict of
# every field is then checked by a plan made once per combination of value types
# (``_fast_entry``), and anything else by ``_entry``, which words the error.

#: Every field's value, in ``FIELD_NAMES`` order (``KeyError`` when one is missing).
_VALUES = operator.itemgetter(*FIELD_NAMES)
#: How many distinct strings ``iter_entries`` shares between entries before starting afresh.
_SHARED = 1 << 16
#: Fields that hold a string (job ids, paths, statuses, digests...): shared as ``_entry``
#: shares them (``kind`` is one of msgspec's own ``KINDS`` strings already).
_REPEATED = tuple(
    FIELD_NAMES.index(name) for name in FIELD_NAMES if str in _FIELDS[name][0] and name != "kind"
)
_RETRY_AFTER_AT = FIELD_NAMES.index("retry_after")
_LISTED_AT = FIELD_NAMES.index("listed")
_RUN_AT = FIELD_NAMES.index("run")


@functools.cache
def _line_struct() -> Any:
    """The msgspec struct type of a line of the fake's shape (every field; each type and range
    ``_entry`` accepts), with ``Entry``'s properties, or None where msgspec is not installed.
    ``record_batches`` gives it as it decodes it (``listed`` made pairs), an ``EntryLike``."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - the tests run both ways (monkeypatch)
        return None
    from typing import Annotated, Union

    number = int | float
    whole = Annotated[int, msgspec.Meta(ge=0)]
    retry_after = msgspec.defstruct(
        "RetryAfterLine",
        [
            ("raw", str),
            ("not_before", number | None),
            ("header", str, RetryAfterRecord.header),
            ("form", str, RetryAfterRecord.form),
        ],
        forbid_unknown_fields=True,
        gc=False,
    )
    special: dict[str, Any] = {
        "seq": whole,
        "kind": Literal[KINDS],
        "received_at": number,
        "status_code": Union[Annotated[int, msgspec.Meta(ge=100, le=999)], None],  # noqa: UP007
        "attempt": Union[whole, None],  # noqa: UP007
        "retry_after": Union[retry_after, None],  # noqa: UP007
        "listed": Union[dict[str, str], None],  # noqa: UP007
        "run": Union[dict[str, Any], None],  # noqa: UP007
        "inline_result": Union[bool, None],  # noqa: UP007
    }
    fields = []
    for name in FIELD_NAMES:
        types, _, _ = _FIELDS[name]
        if name in special:
            kind = special[name]
        elif float in types:
            kind = Union[number, None]  # noqa: UP007
        else:
            kind = Union[str, None] if _NONE in types else str  # noqa: UP007
        fields.append((name, kind))
    # gc=False: a decoded line holds strings, numbers and plain dicts, never a cycle. Entry's
    # own properties (they read fields only), for the struct to be read as an entry
    # (``record_batches``).
    properties = {name: getattr(Entry, name) for name in ("is_header", "latency", "failed")}
    return msgspec.defstruct(
        "EntryRecord",
        fields,
        namespace=properties,
        module=__name__,
        forbid_unknown_fields=True,
        gc=False,
    )


@functools.cache
def _line_decoder() -> Callable[[str | bytes], list[Any]] | None:
    """A line's values in ``FIELD_NAMES`` order, decoded and checked by msgspec, or None where
    msgspec is not installed. Raises ``ValueError`` (or ``RecursionError``) for any line that
    is not of the fake's shape with values ``_entry`` accepts; json.loads then decodes it.

    msgspec decodes what it accepts exactly as json.loads does (integers of any size, floats
    correctly rounded, the last of duplicate keys) and refuses NaN, Infinity, numbers out of
    range, lone surrogates and invalid UTF-8, which json.loads words or accepts on its own.
    """
    line = _line_struct()
    if line is None:  # pragma: no cover - the tests run both ways (monkeypatch)
        return None
    import msgspec

    decode = msgspec.json.Decoder(line).decode
    astuple = msgspec.structs.astuple

    def values(raw: str | bytes) -> list[Any]:
        out = list(astuple(decode(raw)))
        ra = out[_RETRY_AFTER_AT]
        if ra is not None:
            out[_RETRY_AFTER_AT] = RetryAfterRecord(*astuple(ra))
        return out

    return values


def _decoded_entry(out: list[Any], strings: dict[str, str] | None) -> Entry:
    """The ``Entry`` of the values of a line ``_line_decoder`` accepted (``BadEntry`` for a
    run header's ``time_scale`` or ``limits``, the one check msgspec does not make)."""
    if strings is not None:
        share = strings.setdefault
        for index in _REPEATED:
            value = out[index]
            if value is not None:
                out[index] = share(value, value)
    if out[_LISTED_AT] is not None:
        out[_LISTED_AT] = tuple(out[_LISTED_AT].items())
    if out[_RUN_AT] is not None:
        _check_run(out[_RUN_AT])
    return Entry(*out)


# -- whole chunks: hundreds of lines of the fake's shape at a time --------------------------
#
# A file is read in blocks (``entry_batches``); the whole lines of a block are decoded by
# msgspec one after another (the struct of ``_line_decoder``, mapped over the lines in C) and
# made into entries in the same generated loop (``_chunk_reader``). Each line is decoded on
# its own, so the entries are exactly those the line-by-line reader makes; the first line
# msgspec refuses (not of the fake's shape, a blank line, a BOM) or whose run header
# ``_check_run`` refuses ends the loop, and that line alone is read by the line-by-line
# reader (``_line_entries``), which reads it or words why not; the loop then goes on.


def _plain_twin(cls: type) -> type | None:
    """A class with the layout of ``cls`` (its slots, or a ``__dict__``) and plain attribute
    setting, whose instances can become ``cls`` by ``__class__`` assignment; None when ``cls``
    has no such twin.

    ``Entry`` and ``RetryAfterRecord`` are frozen: their ``__init__`` sets each field through
    ``object.__setattr__`` or the slot's descriptor, a call per field. Setting the fields of
    a twin is an ordinary (specialised) attribute store, and assigning ``__class__`` after
    makes it a ``cls`` holding those values: the object ``cls(*values)`` makes, as the
    ``__init__`` of both sets the fields and does nothing else (``tests/test_read_journal.py``
    compares the two)."""
    if cls.__bases__ != (object,):  # pragma: no cover - both are plain classes today
        return None
    namespace: dict[str, Any] = {"__module__": __name__}
    slots = cls.__dict__.get("__slots__")
    if slots is not None:
        if not isinstance(slots, tuple):  # pragma: no cover - dataclasses make a tuple
            return None
        namespace["__slots__"] = slots
    twin = type(f"_Plain{cls.__name__}", (), namespace)
    probe: Any = object.__new__(twin)
    try:
        probe.__class__ = cls
    except TypeError:  # pragma: no cover - a layout __class__ assignment refuses
        return None
    return twin


_ChunkFunctions = tuple[
    Callable[[Iterator[str | bytes], dict[str, str] | None], list[Entry]],
    Callable[[list[Any], dict[str, str] | None], list[Entry]],
    Callable[[Any], list[Any]],
    Callable[[bytes], Any],
]


@functools.cache
def _chunk_functions() -> _ChunkFunctions | None:
    """``(read, build, decode_wrapped, decode)``, or None where msgspec is not installed.

    ``read`` takes lines (without their line breaks) from an iterator and returns the entries
    of those msgspec reads, up to the first it cannot: it has taken that line too, and made no
    entry of it (the caller counts). Equal strings are shared through the dict it is given
    (None: not at all). ``decode_wrapped`` decodes lines each wrapped in ``[`` ``]``
    (``_wrapped_lines``) into 1-tuples of structs, and ``build`` makes their entries as
    ``read`` does, raising ``BadEntry`` for a run header ``_check_run`` refuses. ``decode``
    decodes one line into its struct.

    Made as source and compiled, as ``dataclasses`` makes ``__init__``: one loop, each line
    decoded into a ``_line_struct``, each field read off the struct and set on a plain twin of
    ``Entry`` (``_plain_twin``), the nested fields turned into what ``Entry`` holds (a
    ``RetryAfterRecord``, the ``listed`` pairs), a run header checked (``_check_run``, the one
    check msgspec does not make). Without sharing (a reader that drops entries as it goes) a
    ``RetryAfterRecord`` is made through its twin too, in less than half the time, but then
    holds its fields in a dict of its own (about 64 bytes more); with sharing (a reader that
    keeps them) by its constructor.
    """
    line = _line_struct()
    if line is None:  # pragma: no cover - the tests run both ways (monkeypatch)
        return None
    import msgspec

    repeated = {FIELD_NAMES[index] for index in _REPEATED}
    entry_twin = _plain_twin(Entry)
    record_twin = _plain_twin(RetryAfterRecord)
    record_fields = [field.name for field in dataclasses.fields(RetryAfterRecord)]
    scope: dict[str, Any] = {
        "decode": msgspec.json.Decoder(line).decode,
        "Entry": Entry,
        "EntryTwin": entry_twin,
        "Record": RetryAfterRecord,
        "RecordTwin": record_twin,
        "astuple": msgspec.structs.astuple,
        "checked_run": _checked_run,
    }

    def loop(sharing: bool) -> list[str]:
        """The body of the loop over the structs ``s``, one statement a line."""
        setters: list[str] = []
        values: list[str] = []  # for an Entry without a twin (a constructor call)
        for name in FIELD_NAMES:
            if name == "retry_after":
                value = "None if (v := s.retry_after) is None else Record(*astuple(v))"
                if not sharing and record_twin is not None:
                    setters += [
                        "if (v := s.retry_after) is None:",
                        "    e.retry_after = None",
                        "else:",
                        "    r = RecordTwin()",
                        *(f"    r.{field} = v.{field}" for field in record_fields),
                        "    r.__class__ = Record",
                        "    e.retry_after = r",
                    ]
                    values.append(value)
                    continue
            elif name == "listed":
                value = "None if (v := s.listed) is None else tuple(v.items())"
            elif name == "run":
                value = "v if (v := s.run) is None else checked_run(v)"
            elif sharing and name in repeated:
                value = f"v if (v := s.{name}) is None else share(v, v)"
            else:
                value = f"s.{name}"
            setters.append(f"e.{name} = {value}")
            values.append(value)
        if entry_twin is None:  # pragma: no cover - an Entry without slots: its constructor
            return [f"append(Entry({', '.join(values)}))"]
        return ["e = EntryTwin()", *setters, "e.__class__ = Entry", "append(e)"]

    source = "\n".join(
        [
            "def read(lines, strings):",
            "    out = []",
            "    append = out.append",
            "    try:",
            "        if strings is None:",
            "            for s in map(decode, lines):",
            *(" " * 16 + line for line in loop(sharing=False)),
            "            return out",
            "        share = strings.setdefault",
            "        for s in map(decode, lines):",
            *(" " * 12 + line for line in loop(sharing=True)),
            "    except (ValueError, RecursionError):",  # msgspec's errors; BadEntry
            "        pass",
            "    return out",
            # the same loop over structs msgspec decoded already, each in a 1-tuple
            "def build(wrapped, strings):",
            "    out = []",
            "    append = out.append",
            "    if strings is None:",
            "        for s, in wrapped:",
            *(" " * 12 + line for line in loop(sharing=False)),
            "        return out",
            "    share = strings.setdefault",
            "    for s, in wrapped:",
            *(" " * 8 + line for line in loop(sharing=True)),
            "    return out",
        ]
    )
    exec(source, scope)  # only field names go into the source
    wrapped = msgspec.json.Decoder(tuple[line]).decode_lines  # type: ignore[valid-type]
    return scope["read"], scope["build"], wrapped, scope["decode"]


def _chunk_reader() -> Callable[[Iterator[str | bytes], dict[str, str] | None], list[Entry]] | None:
    """``_chunk_functions``'s line reader, or None where msgspec is not installed."""
    made = _chunk_functions()
    return None if made is None else made[0]


def _checked_run(run: dict[str, Any]) -> dict[str, Any]:
    _check_run(run)
    return run


_ReadPlan = tuple[tuple[tuple[int, _Check], ...], tuple[int, ...], tuple[int, ...]]
#: Value types in field order -> (checks by field index, indexes of strings, of objects), or
#: None when those types alone make the line one ``_entry`` must word an error for.
_READ_PLANS: dict[tuple[type, ...], _ReadPlan | None] = {}
_UNPLANNED: Any = object()


def _finite_float(value: float) -> bool:
    return -math.inf < value < math.inf


def _read_plan(types: tuple[type, ...]) -> _ReadPlan | None:
    checks: list[tuple[int, _Check]] = []
    strings: list[int] = []
    objects: list[int] = []
    for index, (name, kind) in enumerate(zip(FIELD_NAMES, types, strict=True)):
        allowed, check, _ = _FIELDS[name]
        if kind not in allowed:
            return None
        if kind is float:
            checks.append((index, _finite_float))
        elif kind is dict:
            objects.append(index)
        elif kind is str:
            strings.append(index)
            if check is not None:
                checks.append((index, check))
        elif kind is int and check is not None and check is not _finite:
            checks.append((index, check))
    return tuple(checks), tuple(strings), tuple(objects)


def _fast_entry(data: dict[str, Any], strings: dict[str, str] | None) -> Entry | None:
    """The ``Entry`` of a decoded line of the common shape (every field, values of the right
    types and ranges), or None to leave the line to ``_entry``.

    Raises ``BadEntry`` for a nested field (``retry_after``, ``listed``, ``run``) exactly as
    ``_entry`` does: the fields around it passed, so it would reach the same check.
    """
    if len(data) != len(FIELD_NAMES):
        return None
    try:
        values = _VALUES(data)
    except KeyError:
        return None
    types = tuple(map(type, values))
    plan = _READ_PLANS.get(types, _UNPLANNED)
    if plan is _UNPLANNED:
        plan = _read_plan(types)
        if len(_READ_PLANS) < 4096:  # a journal has a handful; a hostile one cannot grow this
            _READ_PLANS[types] = plan
    if plan is None:
        return None
    checks, text, objects = plan
    for index, check in checks:
        if not check(values[index]):
            return None
    out = list(values)
    if strings is not None:
        share = strings.setdefault
        for index in text:
            value = out[index]
            out[index] = share(value, value)
    if objects:
        _finish(data, strings)
        for index in objects:
            out[index] = data[FIELD_NAMES[index]]
    return Entry(*out)


def _json_line(line: str, name: str, number: int) -> Any:
    """``json.loads(line)``, or the ``JournalError`` for a line that is not JSON (``_BLANK``
    for a blank line)."""
    try:
        return json.loads(line)
    except RecursionError:
        raise JournalError(name, number, "not a journal entry: JSON nested too deeply") from None
    except ValueError as exc:
        if not line.strip():
            return _BLANK
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        where = f" at column {exc.pos + 1}" if isinstance(exc, json.JSONDecodeError) else ""
        raise JournalError(
            name, number, f"not JSON ({why}{where}); each line must be one journal entry"
        ) from None


def _text(raw: str | bytes, name: str, number: int) -> str:
    if not isinstance(raw, bytes):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JournalError(
            name,
            number,
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1});"
            " a journal is JSON lines",
        ) from None


#: What ``_json_line`` returns for a blank line (skipped).
_BLANK: Any = object()


def iter_entries(
    lines: Iterable[str | bytes], name: str, *, share_strings: bool = True
) -> Iterator[Entry]:
    """Entries from JSONL ``lines`` (text or UTF-8 bytes), one at a time in file order; blank
    lines skipped. Only the current line is held. With ``share_strings``, equal strings (job
    ids, paths, digests...) are held once between entries, up to ``_SHARED`` of them at a
    time: worth it to a reader that keeps the entries, about a fifth of the time for naught
    to one that drops them as it goes.

    A line of the fake's shape is decoded and checked by msgspec where it is installed
    (``_line_decoder``); any other line by json.loads, then by a plan (``_fast_entry``) or
    field by field (``_entry``). What is accepted, what it holds and every error message are
    json.loads's and ``_entry``'s whichever way a line goes. ``entry_batches`` reads the same
    from blocks of bytes (a file), several times faster.

    Raises ``JournalError`` for the first line that is not an entry.
    """
    return _line_entries(lines, name, {} if share_strings else None, 1)


def _line_entries(
    lines: Iterable[str | bytes], name: str, strings: dict[str, str] | None, first: int
) -> Iterator[Entry]:
    """``iter_entries`` with the dict of shared strings given (None: none shared) and the
    number of the first line."""
    decode = _line_decoder()
    for number, raw in enumerate(lines, start=first):
        if strings is not None and len(strings) > _SHARED:
            strings.clear()
        if decode is not None:
            try:
                values = decode(raw)
            except (ValueError, RecursionError):
                pass  # not of the fake's shape, or not JSON: json.loads decodes or words it
            else:
                if strings is None and values[_LISTED_AT] is None and values[_RUN_AT] is None:
                    yield Entry(*values)  # what _decoded_entry makes of it, one call less
                    continue
                try:
                    entry = _decoded_entry(values, strings)
                except BadEntry as exc:
                    raise JournalError(name, number, str(exc)) from None
                yield entry
                continue
        data = _json_line(_text(raw, name, number), name, number)
        if data is _BLANK:
            continue
        if type(data) is not dict:
            raise JournalError(
                name, number, f"expected a JSON object (a journal entry), got {_show(data)}"
            )
        try:
            yield _fast_entry(data, strings) or _entry(data, strings)
        except BadEntry as exc:
            raise JournalError(name, number, str(exc)) from None


def entry_batches(
    blocks: Iterable[bytes], name: str, *, share_strings: bool = True
) -> Iterator[list[Entry]]:
    """The entries of a JSONL file given as consecutive ``blocks`` of its bytes (of any sizes:
    a line may run over several), in lists, in file order: exactly the entries and the
    ``JournalError`` of ``iter_entries`` over the file's lines (split at ``\n`` only, as a
    binary file iterates). Holds a block, the line it ends in, and its entries until taken.

    The whole lines inside a block are decoded by one msgspec call (``_wrapped_lines``) when
    every one of them is of the fake's shape; otherwise, and for the line that runs into the
    block from the one before, each line is decoded on its own (``_chunk_reader``), but for
    any line msgspec refuses, read alone (``_line_entries``): a bad line is reported after a
    list of the entries before it, as ``iter_entries`` reports it.
    """
    strings: dict[str, str] | None = {} if share_strings else None
    return _batches(blocks, name, strings, records=False)


def record_batches(blocks: Iterable[bytes], name: str) -> Iterator[list[EntryLike]]:
    """``entry_batches`` (strings not shared) for a reader that only reads the entries' fields
    and properties (``EntryLike``): the lines a block's one msgspec call decodes are given as
    the structs it made (``_line_struct``: no ``Entry`` built, about half the cost of a line),
    and so is the line a block starts inside when msgspec reads it; any other line is given
    as the ``Entry`` ``entry_batches`` makes of it. Same lines read, same values, same
    ``JournalError`` after the same entries; ``as_entry`` turns a record into its ``Entry``."""
    return _batches(blocks, name, None, records=True)


def _batches(
    blocks: Iterable[bytes], name: str, strings: dict[str, str] | None, records: bool
) -> Iterator[list[Any]]:
    """``entry_batches`` (``records``: ``record_batches``) with the dict of shared strings given
    (None: none shared)."""
    functions = _chunk_functions() if _line_decoder() is not None else None
    make: Callable[[list[Any]], list[Any]] = _records
    if functions is not None and not records:
        build = functions[1]

        def make(wrapped: list[Any]) -> list[Any]:
            return build(wrapped, strings)

    number = 1  # of the next line
    pending: list[bytes] = []  # the start of that line
    for block in blocks:
        first = block.find(b"\n")
        if first < 0:
            pending.append(block)
            continue
        if strings is not None and len(strings) > _SHARED:
            strings.clear()
        last = block.rfind(b"\n")
        head = block[:first]
        if pending:
            pending.append(head)
            head = b"".join(pending)
            pending.clear()
        tail = block[last + 1 :]
        if tail:
            pending.append(tail)
        if functions is None:
            lines = [head, *block[first + 1 : last].split(b"\n")] if last > first else [head]
            whole = [line + b"\n" for line in lines]
            yield (yield from _batch_of_lines(whole, name, strings, number))
            number += len(lines)
            continue
        read, _, decode_wrapped, decode = functions
        batch: list[Any] = []
        if records:  # the line the block starts inside, as a record where it can be one
            with contextlib.suppress(ValueError, RecursionError):  # BadEntry: a run header
                batch = _records([(decode(head),)])
        if not batch:
            batch = yield from _lines_read(read, [head], name, strings, number, batch)
        number += 1
        if last > first:
            made = _wrapped_lines(block, first, last, decode_wrapped, make)
            if made is None:
                lines = block[first + 1 : last].split(b"\n")
                batch = yield from _lines_read(read, lines, name, strings, number, batch)
                number += len(lines)
            else:
                batch += made
                number += len(made)
        yield batch
    if pending:  # a last line without its line break
        yield (yield from _batch_of_lines([b"".join(pending)], name, strings, number))


def _wrapped_lines(
    block: bytes,
    first: int,
    last: int,
    decode_wrapped: Callable[[Any], list[Any]],
    make: Callable[[list[Any]], list[Any]],
) -> list[Any] | None:
    """What ``make`` makes of the structs of the whole lines of ``block`` after its first line
    break (at ``first``) up to its last (at ``last``), decoded by one msgspec call, each in a
    1-tuple; None unless every one of those lines is one msgspec reads alone, or when ``make``
    raises ``BadEntry`` (a run header ``_check_run`` refuses): the caller then reads them one
    by one.

    Every line break becomes ``]\n[``, so that the lines are ``[line]`` values one after the
    other, and msgspec decodes them as 1-tuples of the line's struct. They are read exactly as
    each line alone is: a line break cannot be inside a JSON string (a control character), so
    each ``]`` and ``[`` put in is outside strings; ``]`` then ``[`` with only whitespace
    between them is valid JSON only between two top-level values, so every line break is
    between two of them; each line then holds at least one value, and as many values as lines
    means each holds exactly one: ``[line]``, a 1-tuple, which only a line holding one JSON
    object of the struct's shape (whitespace around it) decodes to. A blank line (``[]``), a
    BOM, two objects on a line or one over two lines fails, as does deeper nesting than
    msgspec takes (one level more than the line alone: then read alone, as it would be).
    """
    wrapped = block.replace(b"\n", b"]\n[")
    breaks = (len(wrapped) - len(block)) >> 1
    # from the "[" after the first line break to the "]" before the last one (each break
    # before a position moves it by two)
    region = memoryview(wrapped)[first + 2 : last + 2 * breaks - 1]
    try:
        values = decode_wrapped(region)
        if len(values) != breaks - 1:
            return None
        return make(values)
    except (ValueError, RecursionError):  # msgspec's errors; BadEntry for a run header
        return None
    finally:
        region.release()


_LISTED_OF = operator.attrgetter("listed")
_RUN_OF = operator.attrgetter("run")


def _records(wrapped: list[tuple[Any]]) -> list[Any]:
    """The structs of ``wrapped`` (1-tuples) as ``record_batches`` gives them: ``listed`` made
    the pairs ``Entry`` holds, each run header checked (``BadEntry``: ``_check_run``). Looks
    for either a column at a time, in C: most blocks hold neither."""
    structs = list(itertools.chain.from_iterable(wrapped))
    listed = list(map(_LISTED_OF, structs))
    if listed.count(None) != len(listed):
        for struct in structs:
            if struct.listed is not None:
                struct.listed = tuple(struct.listed.items())
    runs = list(map(_RUN_OF, structs))
    if runs.count(None) != len(runs):
        for run in runs:
            if run is not None:
                _check_run(run)
    return structs


def _lines_read(
    read: Callable[[Iterator[str | bytes], dict[str, str] | None], list[Entry]],
    lines: list[bytes],
    name: str,
    strings: dict[str, str] | None,
    first: int,
    batch: list[Entry],
) -> Generator[list[Entry], None, list[Entry]]:
    """``batch`` and the entries of ``lines`` (numbered from ``first``) after it, each line
    decoded on its own by ``read`` but for any line msgspec refuses, read alone
    (``_batch_of_lines``: for a bad line, what was read before it is yielded, then its
    ``JournalError`` raised)."""
    taken = 0
    remaining = iter(lines)
    while taken < len(lines):
        made = read(remaining, strings)
        batch += made
        taken += len(made)
        if taken < len(lines):  # msgspec refused line ``taken``: read it alone
            refused = [lines[taken] + b"\n"]
            batch += yield from _batch_of_lines(refused, name, strings, first + taken, batch)
            taken += 1
    return batch


def _batch_of_lines(
    lines: Iterable[bytes],
    name: str,
    strings: dict[str, str] | None,
    first: int,
    before: list[Entry] | None = None,
) -> Generator[list[Entry], None, list[Entry]]:
    """The entries of ``lines`` read one by one, returned as a list; for a bad line, the
    entries read before it (``before``, then these) are yielded as a list, then its
    ``JournalError`` is raised."""
    batch: list[Entry] = []
    try:
        batch.extend(_line_entries(lines, name, strings, first))
    except JournalError:
        yield [*(before or ()), *batch]
        raise
    return batch


def readable_entries(lines: Sequence[str | bytes]) -> list[Entry]:
    """The entries of those of ``lines`` (text or UTF-8 bytes, with or without a line break) that are entries,
    the others skipped: ``entry_from_line`` of each line that does not raise ``ValueError``
    (or ``TypeError``), in order. The lines msgspec reads are decoded together (``_chunk_reader``), any other
    alone (``entry_from_line``): what ``Journal.run_entries`` reads its file with."""
    read = _chunk_reader() if _line_decoder() is not None else None
    out: list[Entry] = []
    taken = 0
    remaining = iter(lines)
    while taken < len(lines):
        if read is not None:
            made = read(remaining, None)
            out += made
            taken += len(made)
            if taken == len(lines):
                break
        else:
            next(remaining)
        # msgspec refused line ``taken``: as entry_from_line reads it, or skipped
        with contextlib.suppress(ValueError, TypeError):
            out.append(entry_from_line(lines[taken]))
        taken += 1
    return out


def entry_from_line(line: str | bytes) -> Entry:
    """The ``Entry`` one JSONL line stands for, as ``iter_entries`` reads it (msgspec for the
    fake's lines). Raises ``ValueError`` for a line that is not one, a blank line included."""
    for entry in iter_entries((line,), "<line>", share_strings=False):
        return entry
    raise JournalError("<line>", 1, "a blank line, not a journal entry")


def parse_lines(lines: Iterable[str | bytes], name: str) -> list[Entry]:
    """Entries from JSONL ``lines`` (text or UTF-8 bytes), in file order; blank lines skipped.

    Raises ``JournalError`` for the first line that is not an entry.
    """
    return list(iter_entries(lines, name))
