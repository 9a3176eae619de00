"""The writing half of ``fakeprovider.entries``: an entry's JSONL line and its constructor.

``jsonl_line`` writes from a template per pattern of field types; it must give, byte for byte,
what ``json.dumps`` gives for ``Entry.to_dict()``, whatever the values (the reference below is
computed independently of it). ``Entry.__new__`` makes the whole entry (the dataclass's
``__init__`` does not run); it must make what that ``__init__`` makes, refuse what it refuses,
and leave pickling, copying and subclasses working as they do for a dataclass.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import math
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakeprovider import entries as entries_module
from fakeprovider.entries import (
    _DATACLASS_INIT,
    _MOST_WRITERS,
    FIELD_NAMES,
    Entry,
    _exact_rows,
    _rows_lines,
    field_values,
    jsonl_line,
    jsonl_lines,
)
from fakeprovider.journal import RetryAfterRecord
from tests.thorough import thorough


def reference_line(entry: Entry) -> str:
    """What a journal line is by definition: ``json.dumps`` of ``to_dict()``, compact."""
    return json.dumps(entry.to_dict(), separators=(",", ":")) + "\n"


class Text(str):
    """A ``str`` subclass: written as the string it is."""


NASTY = [
    "",
    '"',
    "\\",
    "\x00\x1f\x7f",
    "é ñ 中文 🎥",
    "\ud800 lone surrogate",
    "\u2028\u2029",
    "%s %r %% {} {0}",
    "null",
    "NaN",
]
strings = st.one_of(
    st.sampled_from(NASTY),
    st.text(st.characters(exclude_categories=()), max_size=12),
    st.builds(Text, st.text(max_size=4)),
)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan]),
)
integers = st.one_of(st.integers(), st.integers(min_value=-(10**300), max_value=10**300))
scalars = st.one_of(st.none(), strings, floats, integers, st.booleans())
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(strings, inner, max_size=3)
    ),
    max_leaves=8,
)
retry_afters = st.builds(
    RetryAfterRecord,
    raw=strings,
    not_before=st.one_of(st.none(), floats),
    header=strings,
    form=strings,
)
listed = st.lists(st.tuples(strings, strings), max_size=4).map(tuple)
runs = st.dictionaries(strings, json_values, max_size=4)
#: Any scalar in any field; the nested fields hold their own shapes (or None).
FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    name: scalars for name in FIELD_NAMES if name not in ("retry_after", "listed", "run")
} | {
    "retry_after": st.none() | retry_afters,
    "listed": st.none() | listed,
    "run": st.none() | runs,
}
entries = st.fixed_dictionaries(FIELD_VALUES).map(lambda values: Entry(**values))


@thorough(200, deadline=None)
@given(entries)
def test_a_line_is_json_dumps_of_to_dict_byte_for_byte(entry: Entry) -> None:
    assert jsonl_line(entry) == reference_line(entry)


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, 1e308, -0.0, 0.1, 10**100, True, False, "é\ud800", None],
)
def test_an_unusual_time_or_value_is_written_as_json_dumps_writes_it(value: Any) -> None:
    entry = Entry(
        seq=1,
        kind="status",
        job_id=None,
        method="GET",
        path="/v1/jobs/x",
        client="c",
        received_at=1.0,
        completed_at=value,
        status_since=1e308,  # with another huge time, a sum of the times overflows
        poll_after=value,
    )
    assert jsonl_line(entry) == reference_line(entry)


def test_lines_stay_exact_past_the_number_of_patterns_kept() -> None:
    # every entry a different pattern of types: the cache of templates starts afresh
    base = dict.fromkeys(FIELD_NAMES)
    kinds = [1, 1.5, "x", True]
    written = []
    for n in range(_MOST_WRITERS + 50):
        values = {**base}
        for slot, name in enumerate(FIELD_NAMES[:5]):
            values[name] = kinds[(n >> (2 * slot)) % 4]
        entry = Entry(**values)
        written.append(jsonl_line(entry) == reference_line(entry))
    assert all(written)
    assert len(written) > _MOST_WRITERS


def test_a_request_line_reads_as_the_fake_writes_it() -> None:
    entry = Entry(
        seq=7,
        kind="status",
        job_id="job_1",
        method="GET",
        path="/v1/jobs/job_1",
        client="127.0.0.1",
        received_at=0.25,
        response_started_at=0.5,
        completed_at=0.75,
        status_code=200,
        job_status="processing",
        true_status="processing",
        status_since=0.125,
        poll_after=15.0,
        inline_result=True,
    )
    assert jsonl_line(entry) == (
        '{"seq":7,"kind":"status","job_id":"job_1","method":"GET","path":"/v1/jobs/job_1",'
        '"client":"127.0.0.1","received_at":0.25,"response_started_at":0.5,"completed_at":0.75,'
        '"status_code":200,"job_status":"processing","retry_after":null,"fault":null,'
        '"true_status":"processing","status_since":0.125,"poll_after":15.0,"error_code":null,'
        '"credential":null,"idempotency_key":null,"request_digest":null,"dropped":null,'
        '"event":null,"webhook_id":null,"attempt":null,"delivery":null,"listed":null,'
        '"run":null,"inline_result":true}\n'
    )


@thorough(100, deadline=None)
@given(st.fixed_dictionaries(FIELD_VALUES), st.integers(min_value=0, max_value=len(FIELD_NAMES)))
def test_entry_makes_what_the_dataclass_init_makes(values: dict[str, Any], positional: int) -> None:
    # the first ``positional`` fields by position, the rest by keyword, a None default left out
    args = [values[name] for name in FIELD_NAMES[:positional]]
    required = FIELD_NAMES[:7]
    kwargs = {
        name: values[name]
        for name in FIELD_NAMES[positional:]
        if name in required or values[name] is not None
    }
    made = Entry(*args, **kwargs)
    expected = object.__new__(Entry)
    _DATACLASS_INIT(expected, *args, **kwargs)
    assert [getattr(made, n) for n in FIELD_NAMES] == [getattr(expected, n) for n in FIELD_NAMES]
    assert repr(made) == repr(expected)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        ((1,), {}),
        ((1, "status", None, "GET", "/", "c", 0.0), {"bogus": 1}),
        ((1, "status", None, "GET", "/", "c", 0.0), {"seq": 1}),
        ((1, "status", None, "GET", "/", "c", 0.0, *([None] * 30)), {}),
    ],
)
def test_entry_refuses_bad_arguments_as_the_dataclass_init_does(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError) as dataclass_error:
        _DATACLASS_INIT(object.__new__(Entry), *args, **kwargs)
    with pytest.raises(TypeError) as ours:
        Entry(*args, **kwargs)
    assert str(ours.value) == str(dataclass_error.value)


def test_an_entry_stays_frozen() -> None:
    entry = Entry(1, "status", None, "GET", "/", "c", 0.0)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'seq'"):
        entry.seq = 2  # type: ignore[misc]
    assert dataclasses.replace(entry, seq=3).seq == 3


def test_an_entry_pickles_copies_and_replaces_as_the_dataclass_does() -> None:
    entry = Entry(
        4, "status", "job_1", "GET", "/v1/jobs/job_1", "c", 0.5, listed=(("job_1", "queued"),)
    )
    for again in (copy.copy(entry), copy.deepcopy(entry), pickle.loads(pickle.dumps(entry))):
        assert type(again) is Entry
        assert again == entry
        assert repr(again) == repr(entry)
    assert dataclasses.replace(entry, seq=5) == Entry(
        5, "status", "job_1", "GET", "/v1/jobs/job_1", "c", 0.5, listed=(("job_1", "queued"),)
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Noted(Entry):
    """A dataclass subclass with a field of its own: made by its own generated ``__init__``."""

    note: str = "none"


class Plain(Entry):
    """A subclass without an ``__init__`` of its own: made as ``Entry``'s dataclass makes it."""


def test_a_subclass_is_made_by_its_own_init_and_pickles() -> None:
    noted = Noted(1, "status", None, "GET", "/", "c", 0.0, note="kept")
    assert (type(noted), noted.seq, noted.note) == (Noted, 1, "kept")
    plain = Plain(2, "status", None, "GET", "/", "c", 0.0, fault="slow")
    assert (type(plain), plain.seq, plain.fault) == (Plain, 2, "slow")
    for made in (noted, plain):
        assert copy.copy(made) == pickle.loads(pickle.dumps(made)) == made
        assert type(pickle.loads(pickle.dumps(made))) is type(made)
    with pytest.raises(TypeError, match="missing 7 required positional arguments"):
        Plain()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.seq = 3  # type: ignore[misc]


# -- many lines at once (``jsonl_lines``: msgspec where it writes what json.dumps writes) ------

#: Floats either side of where repr changes form (and msgspec's does not), and the others.
EDGE_FLOATS = [
    1e-4,
    math.nextafter(1e-4, 0),
    math.nextafter(1e16, 0),
    1e16,
    -1e-4,
    -1e16,
    0.0,
    -0.0,
    5e-324,
    1e308,
    math.nan,
    math.inf,
    -math.inf,
]
#: What the fake's own entries hold, mostly, and now and then what msgspec writes otherwise.
plain_floats = st.one_of(
    st.floats(min_value=1e-4, max_value=1e16, exclude_max=True),
    st.floats(min_value=-1e16, max_value=-1e-4, exclude_min=True),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(EDGE_FLOATS),
)
plain_strings = st.one_of(
    st.text(st.characters(max_codepoint=127), max_size=12),  # controls and DEL included
    st.sampled_from(["/v1/jobs/job_0123456789ab", "processing", "127.0.0.1", *NASTY]),
    st.text(max_size=3),
)
plain_ints = st.one_of(st.integers(0, 10**6), st.integers(), st.booleans())
SHAPES: dict[str, st.SearchStrategy[Any]] = {
    "seq": plain_ints,
    "received_at": plain_floats,
    "response_started_at": st.none() | plain_floats,
    "completed_at": st.none() | plain_floats,
    "status_code": st.none() | plain_ints,
    "retry_after": st.none()
    | st.builds(
        RetryAfterRecord,
        raw=plain_strings,
        not_before=st.none() | plain_floats,
        header=plain_strings,
        form=plain_strings,
    ),
    "status_since": st.none() | plain_floats,
    "poll_after": st.none() | plain_floats,
    "attempt": st.none() | plain_ints,
    "listed": st.none() | listed,
    "run": st.none() | runs,
    "inline_result": st.none() | st.booleans(),
}
fake_entries = st.fixed_dictionaries(
    {name: SHAPES.get(name, st.none() | plain_strings) for name in FIELD_NAMES}
).map(lambda values: Entry(**values))
batches = st.lists(st.one_of(fake_entries, entries), max_size=12)


@thorough(200, deadline=None)
@given(batches)
def test_many_lines_are_json_dumps_of_each_to_dict_byte_for_byte(batch: list[Entry]) -> None:
    assert jsonl_lines(batch) == "".join(map(reference_line, batch))


@settings(max_examples=50, deadline=None)
@given(batches)
def test_many_lines_are_the_same_without_msgspec(batch: list[Entry]) -> None:
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(entries_module, "_lines_encoder", lambda: None)
        assert jsonl_lines(batch) == "".join(map(reference_line, batch))


def _status(seq: int, **changes: Any) -> Entry:
    values: dict[str, Any] = {
        "seq": seq,
        "kind": "status",
        "job_id": "job_1",
        "method": "GET",
        "path": "/v1/jobs/job_1",
        "client": "127.0.0.1",
        "received_at": 12.5 + seq,
        "response_started_at": 12.75 + seq,
        "completed_at": 13.0 + seq,
        "status_code": 200,
        "job_status": "processing",
        "true_status": "processing",
        "status_since": 0.0,
        "poll_after": 15.0,
    }
    return Entry(**(values | changes))


def test_the_fakes_entries_go_to_msgspec_and_the_others_are_written_by_hand() -> None:
    batch = [
        _status(1),
        _status(2, completed_at=1e16),
        _status(3, poll_after=math.nan),
        _status(4, status_since=5e-5),
        _status(5, listed=(("job_1", "processing"),)),
        _status(6, run={"scenario": "x"}),
        _status(7, job_status=1.5),
        _status(8, retry_after=RetryAfterRecord("1", 14.0)),
        _status(9, retry_after=RetryAfterRecord("1", math.inf)),
        _status(10, client=Text("subclass")),  # msgspec refuses it: written by hand
        _status(11, path="/v1/jobs/é\x7f"),  # msgspec writes these raw: written by hand
    ]
    assert _exact_rows(batch) == {1, 2, 3, 4, 5, 8}
    assert jsonl_lines(batch) == "".join(map(reference_line, batch))


def test_many_lines_refuse_what_one_line_refuses() -> None:
    with pytest.raises(TypeError, match=r"^Object of type bytes is not JSON serializable$"):
        jsonl_lines([_status(1), _status(2, client=b"bytes")])
    assert jsonl_lines([]) == ""


def test_entry_shows_the_dataclass_signature_with_its_annotations() -> None:
    from fakeprovider.entries import _DATACLASS_INIT

    shown = inspect.signature(Entry)
    dataclass_init = inspect.signature(_DATACLASS_INIT)
    assert list(shown.parameters.values()) == list(dataclass_init.parameters.values())[1:]
    assert str(shown).startswith("(seq: 'int', kind: 'str', job_id: 'str | None', method: 'str'")


def test_a_dataclass_subclass_shows_its_own_fields_in_its_signature() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Tagged(Entry):
        tag: str = "x"

    parameters = list(inspect.signature(Tagged).parameters)
    assert parameters == [*inspect.signature(Entry).parameters, "tag"]
    assert list(inspect.signature(Plain).parameters) == list(inspect.signature(Entry).parameters)


def _as_rows(batch: list[Entry], pattern: list[bool]) -> list[Any]:
    """``batch`` with the entries ``pattern`` picks given as rows (lists of their values)."""
    return [list(field_values(e)) if pattern[i % len(pattern)] else e for i, e in enumerate(batch)]


@thorough(100, deadline=None)
@given(batches, st.lists(st.booleans(), min_size=1, max_size=5))
def test_rows_make_the_lines_of_their_entries_byte_for_byte(
    batch: list[Entry], pattern: list[bool]
) -> None:
    # the journal keeps the engine's entries as rows: alone, or mixed with entries
    expected = "".join(map(reference_line, batch))
    assert _rows_lines(_as_rows(batch, pattern)) == expected
    assert _rows_lines(_as_rows(batch, [True])) == expected


@settings(max_examples=30, deadline=None)
@given(batches)
def test_rows_make_the_same_lines_without_msgspec(batch: list[Entry]) -> None:
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(entries_module, "_lines_encoder", lambda: None)
        assert _rows_lines(_as_rows(batch, [True, False])) == "".join(map(reference_line, batch))


def test_rows_of_the_fakes_entries_and_the_others_are_written_as_their_entries() -> None:
    batch = [
        _status(1),
        _status(2, completed_at=1e16),
        _status(3, client=Text("subclass")),
        _status(4, path="/v1/jobs/\u00e9\x7f"),
        _status(5, retry_after=RetryAfterRecord("1", 14.0)),
    ]
    rows = [list(field_values(e)) for e in batch]
    assert _rows_lines(rows) == "".join(map(reference_line, batch))
    assert _rows_lines(rows[:1] + rows[2:3]) == reference_line(batch[0]) + reference_line(batch[2])
    with pytest.raises(TypeError, match=r"^Object of type bytes is not JSON serializable$"):
        _rows_lines([rows[0], list(field_values(_status(2, client=b"bytes")))])
