"""Reading a journal: ``iter_journal`` streams entries in file order, ``read_journal`` sorts them."""

from __future__ import annotations

import copy
import dataclasses
import gc
import io
import itertools
import json
import pickle
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from fakeprovider import entries, journal
from fakeprovider.entries import (
    FIELD_NAMES,
    BadEntry,
    JournalError,
    _show,
    entry_from_dict,
    jsonl_line,
)
from fakeprovider.journal import Entry, Journal, RetryAfterRecord, iter_journal, read_journal
from tests.bench_scripts import load_script


def entry(seq: int, **kwargs: object) -> Entry:
    fields: dict[str, object] = {
        "kind": "status",
        "job_id": "job_1",
        "method": "GET",
        "path": "/v1/jobs/job_1",
        "client": "c",
        "received_at": float(seq),
        **kwargs,
    }
    return Entry(seq=seq, **fields)  # type: ignore[arg-type]


def jsonl(*entries: Entry) -> str:
    return "".join(map(jsonl_line, entries))


HEADER = entry(
    0, kind="admin", job_id=None, method="POST", path="/__admin/reset", run={"scenario": "x"}
)


def test_iter_journal_yields_entries_in_file_order_headers_included(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl(entry(2), HEADER, entry(1)))
    assert [(e.seq, e.is_header) for e in iter_journal(path)] == [
        (2, False),
        (0, True),
        (1, False),
    ]
    assert [e.seq for e in read_journal(path)] == [0, 1, 2]
    assert list(iter_journal(str(path))) == [entry(2), HEADER, entry(1)]


def test_iter_journal_yields_the_entries_before_a_bad_line_then_names_it(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl(entry(1), entry(2)) + "\n[1]\n" + jsonl(entry(3)))
    entries = iter_journal(path)
    assert [next(entries).seq, next(entries).seq] == [1, 2]
    with pytest.raises(
        ValueError, match=r"run.jsonl:4: expected a JSON object \(a journal entry\), got an array$"
    ):
        next(entries)


def test_iter_journal_reads_open_streams_by_their_name() -> None:
    text = io.StringIO(jsonl(entry(1)) + '{"seq": 2}\n')
    with pytest.raises(ValueError, match=r"^<journal>:2: kind: missing; every entry has"):
        list(iter_journal(text))
    binary = io.BufferedReader(io.BytesIO(jsonl(entry(1)).encode()))
    assert list(iter_journal(binary)) == [entry(1)]


def test_iter_journal_opens_a_path_only_when_iterated_and_closes_it_when_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = iter_journal(tmp_path / "missing.jsonl")  # nothing opened yet
    with pytest.raises(FileNotFoundError):
        next(missing)
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl(entry(1), entry(2)))
    opened: list[io.BufferedReader] = []
    real_open = open

    def recording_open(*args: Any, **kwargs: Any) -> Any:
        handle = real_open(*args, **kwargs)
        opened.append(handle)
        return handle

    monkeypatch.setattr("builtins.open", recording_open)
    entries = iter_journal(path)
    assert next(entries) == entry(1)
    assert [handle.closed for handle in opened] == [False]
    entries.close()  # type: ignore[attr-defined]
    assert [handle.closed for handle in opened] == [True]


# -- msgspec and json.loads: the same entries and the same errors -----------------------------


def reference_entries(lines: list[bytes], name: str) -> list[Entry]:
    """What the reader did before msgspec and the fast path: json.loads and ``entry_from_dict``
    on every line (the oracle for the differential tests below)."""
    return list(reference_reading(lines, name))


def reference_reading(lines: Iterable[bytes], name: str) -> Iterator[Entry]:
    """``reference_entries`` one entry at a time (the entries before a bad line, then its error)."""
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JournalError(
                name,
                number,
                f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1});"
                " a journal is JSON lines",
            ) from None
        try:
            data = json.loads(line)
        except RecursionError:
            raise JournalError(
                name, number, "not a journal entry: JSON nested too deeply"
            ) from None
        except ValueError as exc:
            if not line.strip():
                continue
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            where = f" at column {exc.pos + 1}" if isinstance(exc, json.JSONDecodeError) else ""
            raise JournalError(
                name, number, f"not JSON ({why}{where}); each line must be one journal entry"
            ) from None
        if type(data) is not dict:
            raise JournalError(
                name, number, f"expected a JSON object (a journal entry), got {_show(data)}"
            )
        try:
            yield entry_from_dict(data)
        except BadEntry as exc:
            raise JournalError(name, number, str(exc)) from None


def outcome(read: Callable[[], list[Entry]]) -> tuple[str, Any]:
    """The entries read, by ``repr`` (which tells 1 from 1.0 and -0.0 from 0.0), or the error."""
    try:
        return "read", [repr(entry) for entry in read()]
    except ValueError as exc:
        return "refused", str(exc)


def read(source: io.BytesIO | io.StringIO, share_strings: bool = False) -> tuple[str, Any]:
    return outcome(partial(list, iter_journal(source, share_strings=share_strings)))


SAMPLES = [
    HEADER,
    entry(1, kind="submit", path="/v1/jobs", method="POST", status_code=202, poll_after=5.0),
    entry(
        2,
        status_code=503,
        response_started_at=2.5,
        completed_at=2.75,
        retry_after=RetryAfterRecord("3", 5.5),
        fault="flaky",
        true_status="processing",
        status_since=1.25,
    ),
    entry(3, kind="list", job_id=None, status_code=200, listed=(("j_1", "queued"),)),
    entry(
        4,
        kind="webhook",
        method="POST",
        path="/hook",
        event="job.succeeded",
        webhook_id="msg_1",
        attempt=1,
        status_code=200,
        completed_at=4.5,
    ),
    entry(5, status_code=200, job_status="succeeded", inline_result=True, credential="c:ab12"),
]
#: JSON where a compiled decoder and json.loads may part ways (orjson does on several).
TOKENS = [
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"18446744073709551615",
    b"18446744073709551616",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"99999999999999999999999999999999",
    b"9" * 4301,
    b"1e19",
    b"9.3e18",
    b"-9.3e18",
    b"9223372036854775807.0",
    b"-0",
    b"-0.0",
    b"0.1",
    b"1E2",
    b"2.2250738585072011e-308",
    b"4.9e-324",
    b"1.7976931348623157e308",
    b"1.7976931348623159e308",
    b"0.30000000000000004",
    b"123456789.123456789123",
    b"01",
    b"1.",
    b"+1",
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\ud83d\\ude80"',
    b'"\\u0000"',
    b'"\xc3\xa9"',
    b'"\xed\xa0\x80"',
    b'"\xff"',
    b'"a\x1fb"',
    b'"\x7f"',
    b'"\\/"',
    b"true",
    b"null",
    b"[]",
    b"{}",
    b'{"raw": "2", "not_before": 1e19}',
    b'{"raw": "2", "not_before": 18446744073709551616}',
    b'{"raw": "2", "not_before": NaN}',
    b'{"j_1": 18446744073709551616}',
    b'{"time_scale": 18446744073709551616}',
    b'{"time_scale": 1e400}',
    b'{"time_scale": 0}',
    b'{"time_scale": "fast", "limits": {}}',
    b'{"limits": 5}',
    b'{"limits": [' + b"[" * 70 + b"]" * 70 + b"]}",
    b"[" * 63 + b"]" * 63,
    b"[" * 64 + b"]" * 64,
    b"[" * 65 + b"]" * 65,
    b"[" * 1100 + b"]" * 1100,
]


def mutate(rng: random.Random, line: bytes) -> bytes:
    """A journal line of the fake's, changed where msgspec and json.loads might disagree."""
    choice = rng.random()
    fields = list(re.finditer(rb'"([a-z_]+)":(null|"[^"]*"|[-0-9.e]+|true|false)', line))
    if fields and choice < 0.5:  # one field's value
        found = rng.choice(fields)
        return line[: found.start(2)] + rng.choice(TOKENS) + line[found.end(2) :]
    if fields and choice < 0.6:  # a key twice
        return (
            line.rstrip(b"}\n")
            + b","
            + b'"'
            + rng.choice(fields).group(1)
            + b'"'
            + b":"
            + rng.choice(TOKENS)
            + b"}\n"
        )
    if len(fields) > 1 and choice < 0.7:  # a field less
        found = rng.choice(fields[1:])
        return line[: found.start() - 1] + line[found.end() :]
    if choice < 0.8:  # a byte changed
        at = rng.randrange(len(line))
        return line[:at] + bytes([rng.randrange(256)]) + line[at + 1 :]
    if choice < 0.85:  # cut short
        return line[: rng.randrange(len(line))]
    if choice < 0.9:  # around the line: a BOM, whitespace
        return (
            rng.choice([b"\xef\xbb\xbf", b" ", b"\t", b"\x0c", b""])
            + line.rstrip(b"\n")
            + rng.choice([b"\r\n", b" \n", b"\x0b\n", b"\n", b""])
        )
    return rng.choice(TOKENS) + b"\n"  # not an object at all


def test_msgspec_and_json_loads_read_mutated_lines_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of mutated lines (bounded: 4,000 or 4 seconds), each read alone as bytes and
    as text, with msgspec and without it: the same entries (by repr) or the same error as
    json.loads and ``entry_from_dict`` (the reader before msgspec)."""
    decode = entries._line_decoder()  # None where msgspec has no wheel: json.loads alone
    rng = random.Random(15)
    good = [jsonl_line(sample).encode() for sample in SAMPLES]
    stop = time.monotonic() + 4.0
    tally: Counter[str] = Counter()
    for number in range(4000):
        if time.monotonic() > stop:
            break
        line = mutate(rng, rng.choice(good))
        for _ in range(rng.choice([0, 0, 1, 2])):
            line = mutate(rng, line) if line.endswith(b"\n") else line
        data = good[1] + line + good[2]  # a line cut short runs into the next, as in a file
        expected = outcome(partial(reference_entries, list(io.BytesIO(data)), "<journal>"))
        assert read(io.BytesIO(data)) == expected, (number, line)
        assert read(io.BytesIO(data), share_strings=True) == expected, (number, line)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            split = [part.encode() for part in io.StringIO(text, newline="")]  # \r ends one
            as_text = outcome(partial(reference_entries, split, "<journal>"))
            assert read(io.StringIO(text, newline="")) == as_text, (number, line)
        with monkeypatch.context() as patch:
            patch.setattr(entries, "_line_decoder", lambda: None)
            assert read(io.BytesIO(data)) == expected, (number, line)
            assert read(io.BytesIO(data), share_strings=True) == expected, (number, line)
        tally[expected[0]] += 1
        try:
            if decode is not None:
                decode(line)
        except (ValueError, RecursionError):
            tally["msgspec refused"] += 1
        else:
            tally["msgspec read"] += 1
    tried = tally["read"] + tally["refused"]
    assert tried >= 500
    assert tally["read"] > tried / 20  # about 1 in 9
    assert tally["refused"] > tried / 4
    if decode is not None:
        assert tally["msgspec refused"] > tried / 4
        assert tally["msgspec read"] > tried / 40  # about 1 in 15 (the unchanged lines: all)


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (b"18446744073709551616", 18446744073709551616),  # orjson makes a float of it
        (b"-9223372036854775809", -9223372036854775809),  # orjson makes a float of it
        (b"9" * 30, int("9" * 30)),  # orjson makes a float of it
        (b"1e19", 1e19),
        (b"1.5e300", 1.5e300),
        (b"-0", 0),
        (b"-0.0", -0.0),
        (b"4.9e-324", 5e-324),
    ],
)
def test_a_received_at_reads_as_json_loads_reads_it(value: bytes, read: float) -> None:
    line = jsonl_line(entry(1)).encode().replace(b'"received_at":1.0', b'"received_at":' + value)
    (got,) = iter_journal(io.BytesIO(line))
    assert repr(got.received_at) == repr(read)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"NaN", "received_at: expected a finite number (clock seconds), got nan"),
        (b"-Infinity", "received_at: expected a finite number (clock seconds), got -inf"),
        (b"1e400", "received_at: expected a finite number (clock seconds), got inf"),
        (b'"\\ud800"', 'received_at: expected a finite number (clock seconds), got "\\ud800"'),
        (
            b"[" * 70 + b"]" * 70,
            "received_at: expected a finite number (clock seconds), got an array",
        ),
        (b"[" * 1100 + b"]" * 1100, "not a journal entry: JSON nested too deeply"),
        (b"9" * 4301, "not JSON (Exceeds the limit (4300 digits) for integer string conversion:"),
    ],
)
def test_what_msgspec_refuses_is_worded_by_json_loads(value: bytes, message: str) -> None:
    line = jsonl_line(entry(1)).encode().replace(b'"received_at":1.0', b'"received_at":' + value)
    with pytest.raises(ValueError, match="^" + re.escape(f"<journal>:1: {message}")):
        list(iter_journal(io.BytesIO(line)))


def test_a_line_of_the_fakes_shape_and_any_other_make_the_same_entry() -> None:
    line = jsonl_line(SAMPLES[2])
    data = json.loads(line)
    shuffled = dict(reversed(data.items()))  # every field, another order
    fewer = {name: value for name, value in data.items() if value is not None}
    for variant in (data, shuffled, fewer):
        text = json.dumps(variant) + "\n"
        assert list(iter_journal(io.StringIO(text))) == [SAMPLES[2]]
    assert entries._fast_entry(dict(fewer), {}) is None  # left to the careful path


@pytest.mark.parametrize("decoder", ["msgspec", "json"])
def test_shared_strings_are_held_once_and_start_afresh_past_the_bound(
    monkeypatch: pytest.MonkeyPatch, decoder: str
) -> None:
    if decoder == "json":
        monkeypatch.setattr(entries, "_line_decoder", lambda: None)
    journal = [entry(n, job_id=f"job_{n // 2}", client="c", fault="slow") for n in range(1, 20)]
    text = jsonl(*journal)
    shared = list(iter_journal(io.StringIO(text), share_strings=True))
    assert shared == journal
    assert len({id(e.job_id) for e in shared}) == len({e.job_id for e in shared}) == 10
    assert len({id(e.fault) for e in shared}) == 1
    apart = list(iter_journal(io.StringIO(text)))
    assert apart == journal
    monkeypatch.setattr(entries, "_SHARED", 2)
    assert list(iter_journal(io.StringIO(text), share_strings=True)) == journal


def test_numbers_of_every_form_read_as_json_loads_reads_them() -> None:
    """Random JSON numbers (up to 40 digits, exponents to +-400, halfway cases among them) in a
    time field: msgspec's reading of each is json.loads's, or it leaves the line to json."""
    rng = random.Random(150)
    line = jsonl_line(entry(1)).encode()
    numbers = []
    for _ in range(3000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
        number = rng.choice(["", "-"]) + (digits.lstrip("0") or "0")
        if rng.random() < 0.7:
            number += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
        if rng.random() < 0.5:
            number += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 400))
        numbers.append(number.encode())
    numbers += [repr(rng.uniform(-1e9, 1e9)).encode() for _ in range(500)]
    numbers += [b"1.00000000000000011102230246251565404236316680908203125", b"9007199254740993"]
    lines = [line.replace(b'"received_at":1.0', b'"received_at":' + n) for n in numbers]
    for number, one in zip(numbers, lines, strict=True):
        expected = outcome(partial(reference_entries, [one], "<journal>"))
        assert read(io.BytesIO(one)) == expected, number


# -- blocks: a file read in large pieces, many lines decoded at once -------------------------


def prefix_and_error(entries: Iterator[Entry]) -> tuple[list[str], str | None]:
    """The entries read (by ``repr``) up to the first error, and the error (None: none)."""
    read: list[str] = []
    try:
        for one in entries:
            read.append(repr(one))
    except ValueError as exc:
        return read, str(exc)
    return read, None


def in_blocks(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at ``cuts`` (offsets, in order)."""
    bounds = [0, *cuts, len(data)]
    return [data[low:high] for low, high in itertools.pairwise(bounds)]


def from_blocks(blocks: list[bytes], share_strings: bool) -> Iterator[Entry]:
    for batch in entries.entry_batches(blocks, "<journal>", share_strings=share_strings):
        yield from batch


def journal_of(rng: random.Random, good: list[bytes]) -> bytes:
    """Up to 200 lines: mostly the fake's (some with CRLF), now and then a mutated one, a
    blank or whitespace line; sometimes no last line break, or a BOM."""
    lines = []
    for _ in range(rng.randint(1, rng.choice([10, 60, 200]))):
        choice = rng.random()
        line = rng.choice(good)
        if choice < 0.03:
            line = mutate(rng, line)
        elif choice < 0.05:
            line = rng.choice([b"\n", b" \n", b"\r\n", b"\t\n"])
        elif choice < 0.1:
            line = line[:-1] + b"\r\n"
        lines.append(line)
    data = b"".join(lines)
    if rng.random() < 0.2:
        data = data.rstrip(b"\n")
    if rng.random() < 0.03:
        data = b"\xef\xbb\xbf" + data
    return data


def test_blocks_of_any_size_read_as_lines_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """Journals of many lines read through blocks cut at random (lines over block edges, a bad
    line at an edge, one byte a block) and through ``iter_journal`` with small blocks: the
    entries and the error of the line-by-line reference, the entries before a bad line
    included, with msgspec and without it, strings shared or not (bounded: 4 seconds)."""
    rng = random.Random(1515)
    good = [jsonl_line(sample).encode() for sample in SAMPLES]
    stop = time.monotonic() + 4.0
    tally: Counter[str] = Counter()
    for number in range(2000):
        if time.monotonic() > stop:
            break
        data = journal_of(rng, good)
        expected = prefix_and_error(reference_reading(io.BytesIO(data), "<journal>"))
        tally["refused" if expected[1] else "read"] += 1
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 12))))
        if rng.random() < 0.05:
            cuts = list(range(1, len(data)))  # a byte at a time
        blocks = in_blocks(data, cuts)
        share = rng.random() < 0.5
        assert prefix_and_error(from_blocks(blocks, share)) == expected, (number, cuts)
        monkeypatch.setattr(journal, "_BLOCK", rng.choice([1, 2, 7, 300, 557, 4096]))
        stream = io.BufferedReader(io.BytesIO(data), buffer_size=rng.choice([1, 64, 8192]))
        assert prefix_and_error(iter_journal(stream, share_strings=share)) == expected, number
        if number % 5 == 0:
            with monkeypatch.context() as patch:
                patch.setattr(entries, "_line_decoder", lambda: None)
                assert prefix_and_error(from_blocks(blocks, share)) == expected, number
    assert tally["read"] + tally["refused"] >= 100
    assert tally["read"] > 20
    assert tally["refused"] > 20


def reshaped(rng: random.Random, lines: list[bytes]) -> bytes:
    """``lines`` with their line breaks moved about where a block's one msgspec call must not
    be fooled: a line over two lines (broken after a comma, a colon or inside a string, or
    inside a nested array of a run header), two lines on one (nothing, a space, a tab, or
    ``][``, which the one call's wrapping would read as two values), both near each other (as many values as lines in all), blank lines and CRLF."""
    out = list(lines)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(out))
        line = out[at]
        choice = rng.random()
        if choice < 0.35:  # one line over two
            marks = [m.end() for m in re.finditer(rb'[,:]|"a|\[1', line)]
            if marks:
                cut = rng.choice(marks)
                out[at : at + 1] = [line[:cut] + b"\n", line[cut:]]
        elif choice < 0.7 and at + 1 < len(out):  # two lines on one
            between = rng.choice([b"", b" ", b"\t", b"][", b"] ["])  # "][": two "[line]"
            out[at : at + 2] = [line[:-1] + between + out[at + 1]]
        elif choice < 0.85:
            out.insert(at, rng.choice([b"\n", b" \n", b"\r\n"]))
        else:
            out[at] = line[:-1] + b"\r\n"
    return b"".join(out)


def test_lines_moved_about_in_a_block_read_as_lines_do() -> None:
    """A block's whole lines are decoded by one msgspec call (``entries._wrapped_lines``)
    only when that reads exactly what each line alone reads: lines broken in two, two lines
    on one, both at once (as many JSON values as lines), blank lines; the entries before the
    first bad line and its error are the line-by-line reference's, whatever the cuts into
    blocks (bounded: 3 seconds)."""
    rng = random.Random(1516)
    nested = jsonl_line(
        entry(0, kind="admin", job_id=None, path="/__admin/reset", run={"a": [1, [2, 3]]})
    ).encode()
    good = [jsonl_line(sample).encode() for sample in SAMPLES] + [nested]
    stop = time.monotonic() + 3.0
    tally: Counter[str] = Counter()
    for number in range(3000):
        if time.monotonic() > stop:
            break
        data = reshaped(rng, [rng.choice(good) for _ in range(rng.randint(2, 40))])
        expected = prefix_and_error(reference_reading(io.BytesIO(data), "<journal>"))
        tally["refused" if expected[1] else "read"] += 1
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 3))))
        for share in (False, True):
            got = prefix_and_error(from_blocks(in_blocks(data, cuts), share))
            assert got == expected, (number, data, cuts)
    assert tally["read"] > 20
    assert tally["refused"] > 20


def test_as_many_values_as_lines_over_the_wrong_lines_is_not_read_as_a_block() -> None:
    """A line broken in two and two lines on one make as many JSON values as lines: the
    block is then read line by line, which names the broken line."""
    one, two, three = (jsonl_line(entry(seq)).encode() for seq in (1, 2, 3))
    cut = one.index(b',"method"') + 1
    data = b"\n" + one[:cut] + b"\n" + one[cut:-1] + two + three + b"\n"
    assert prefix_and_error(from_blocks([data], share_strings=False)) == (
        [],
        "<journal>:2: not JSON (Expecting property name enclosed in double quotes at column 44);"
        " each line must be one journal entry",
    )
    joined = b"\n" + one[:-1] + b"][" + two + three  # "[one][two]" on line 2: two values
    assert prefix_and_error(from_blocks([joined], share_strings=False)) == (
        [],
        "<journal>:2: not JSON (Extra data at column 490); each line must be one journal entry",
    )


def test_a_block_of_the_fakes_lines_is_decoded_by_one_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the line a block starts inside, every whole line of a block of the fake's lines
    goes through the one msgspec call, and what it makes is what the lines alone make."""
    if entries._line_decoder() is None:  # pragma: no cover - msgspec has a wheel here
        pytest.skip("msgspec is not installed: every line is read by json.loads")
    lines = [jsonl_line(sample).encode() for sample in SAMPLES * 20]
    data = b"".join(lines)
    made: list[int] = []
    real = entries._wrapped_lines

    def counting(*args: Any) -> list[Entry] | None:
        found = real(*args)
        made.append(-1 if found is None else len(found))
        return found

    monkeypatch.setattr(entries, "_wrapped_lines", counting)
    read = list(from_blocks([b"\n" + data], share_strings=False))
    assert made == [len(lines)]
    assert [repr(one) for one in read] == [repr(one) for one in reference_reading(lines, "x")]


@pytest.mark.parametrize("where", ["first", "last whole", "over the edge", "after the edge"])
def test_a_bad_line_at_a_block_edge_is_named_after_the_entries_before_it(where: str) -> None:
    lines = [jsonl_line(entry(seq)).encode() for seq in range(1, 7)]
    lines[3] = b'{"seq": 4, "kind": "nope"}\n'
    data = b"".join(lines)
    start = sum(map(len, lines[:3]))  # where the bad line starts
    cut = {
        "first": start,
        "last whole": start + len(lines[3]),
        "over the edge": start + 5,
        "after the edge": start + len(lines[3]) + 1,
    }[where]
    read, error = prefix_and_error(from_blocks(in_blocks(data, [cut]), share_strings=False))
    assert read == [repr(entry(seq)) for seq in (1, 2, 3)]
    assert error == "<journal>:4: kind: expected one of " + ", ".join(map(repr, entries.KINDS)) + (
        ', got "nope"'
    )


def test_a_journal_of_the_fakes_lines_is_read_a_block_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No line of a journal the fake wrote goes through the line-by-line reader (where a
    refused block would go), and the entries are what that reader makes of them."""
    lines = [jsonl_line(sample).encode() for sample in SAMPLES * 50]
    data = b"".join(lines)
    expected = list(entries.iter_entries(lines, "<journal>", share_strings=False))

    def no_line_by_line(*args: object) -> Iterator[Entry]:
        raise AssertionError("read line by line")

    monkeypatch.setattr(entries, "_line_entries", no_line_by_line)
    if entries._line_decoder() is None:  # pragma: no cover - msgspec has a wheel here
        pytest.skip("msgspec is not installed: every line is read by json.loads")
    for share, block in itertools.product((False, True), (1000, 1 << 16)):
        monkeypatch.setattr(journal, "_BLOCK", block)  # lines over block edges; all in one
        read = list(iter_journal(io.BytesIO(data), share_strings=share))
        assert read == expected
        assert [repr(one) for one in read] == [repr(one) for one in expected]
        assert {type(one) for one in read} == {Entry}
        assert {type(one.retry_after) for one in read} == {RetryAfterRecord, type(None)}


def test_only_the_lines_msgspec_refuses_are_read_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line not of the fake's shape (here: fields missing, as an older fake wrote them) or
    a blank one in a block is read by the line-by-line reader alone, at its own number; the
    lines around it are read with the block."""
    if entries._line_decoder() is None:  # pragma: no cover - msgspec has a wheel here
        pytest.skip("msgspec is not installed: every line is read by json.loads")
    older = json.dumps(
        {
            "seq": 3,
            "kind": "status",
            "method": "GET",
            "path": "/",
            "client": "c",
            "received_at": 3.0,
        }
    )
    lines = [jsonl_line(entry(n)) for n in range(1, 7)]
    lines[2] = older + "\n"
    lines[4] = "\n"
    alone: list[tuple[list[str | bytes], int]] = []
    real = entries._line_entries

    def recording(lines: list[str | bytes], name: str, strings: Any, first: int) -> Any:
        alone.append((list(lines), first))
        return real(lines, name, strings, first)

    monkeypatch.setattr(entries, "_line_entries", recording)
    read = list(iter_journal(io.BytesIO("".join(lines).encode())))
    assert read == [entry(1), entry(2), entry(3, job_id=None, path="/"), entry(4), entry(6)]
    assert alone == [([older.encode() + b"\n"], 3), ([b"\n"], 5)]


@pytest.mark.parametrize("depth", [1, 70, 1100])
def test_a_deeply_nested_run_header_in_a_block_reads_as_json_loads_reads_it(depth: int) -> None:
    """msgspec gives up on deep nesting (RecursionError) where json.loads may not: the line is
    then read alone, and read or refused as json.loads has it."""
    run = b'{"scenario":' + b"[" * depth + b"]" * depth + b"}"
    header = jsonl_line(HEADER).encode().replace(b'{"scenario":"x"}', run)
    data = jsonl(entry(1)).encode() + header + jsonl(entry(2)).encode()
    expected = prefix_and_error(reference_reading(io.BytesIO(data), "<journal>"))
    assert prefix_and_error(iter_journal(io.BytesIO(data))) == expected
    if depth == 1100:
        assert expected[1] == "<journal>:2: not a journal entry: JSON nested too deeply"


def test_entries_made_a_block_at_a_time_are_entries_made_by_their_constructor() -> None:
    """The block reader makes each ``Entry`` (and ``RetryAfterRecord``) without calling its
    ``__init__`` (``entries._plain_twin``): what it makes behaves as the constructor's in
    every way a caller can tell."""
    assert entries._plain_twin(Entry) is not None  # the fast way is the one taken
    assert entries._plain_twin(RetryAfterRecord) is not None
    lines = [jsonl_line(sample).encode().rstrip(b"\n") for sample in SAMPLES]
    read = entries._chunk_reader()
    if read is None:  # pragma: no cover - msgspec has a wheel here
        pytest.skip("msgspec is not installed")
    for strings in (None, {}):
        made = read(iter(lines), strings)
        for one, sample in zip(made, SAMPLES, strict=True):
            assert type(one) is Entry
            assert one == sample
            if sample.run is None:  # a run header holds a dict: not hashable either way
                assert hash(one) == hash(sample)
            assert repr(one) == repr(sample)
            assert jsonl_line(one) == jsonl_line(sample)
            assert dataclasses.replace(one, seq=9) == dataclasses.replace(sample, seq=9)
            assert copy.copy(one) == pickle.loads(pickle.dumps(one)) == sample
            assert dataclasses.asdict(one) == dataclasses.asdict(sample)
            with pytest.raises(dataclasses.FrozenInstanceError):
                one.seq = 3  # type: ignore[misc]
            if sample.retry_after is not None:
                assert type(one.retry_after) is RetryAfterRecord
                assert one.retry_after == sample.retry_after
                assert hash(one.retry_after) == hash(sample.retry_after)
                with pytest.raises(dataclasses.FrozenInstanceError):
                    one.retry_after.raw = "x"  # type: ignore[misc]


@pytest.mark.parametrize("limit", [0, 1, 300, None])
def test_a_limit_reads_the_first_bytes_of_a_path_as_lines_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int | None
) -> None:
    path = tmp_path / "run.jsonl"
    data = jsonl(*SAMPLES).encode()
    path.write_bytes(data)
    monkeypatch.setattr(journal, "_BLOCK", 64)
    cut = data if limit is None else data[:limit]
    expected = prefix_and_error(reference_reading(io.BytesIO(cut), str(path)))
    assert prefix_and_error(iter_journal(path, limit=limit)) == expected
    if limit == 300:  # a line cut short
        assert expected[1] is not None
        assert expected[1].startswith(f"{path}:1: not JSON")


def test_entry_from_line_reads_a_line_as_iter_journal_does() -> None:
    for sample in SAMPLES:
        assert entries.entry_from_line(jsonl_line(sample)) == sample
        assert entries.entry_from_line(jsonl_line(sample).encode()) == sample
    for line, message in [
        ("\n", "<line>:1: a blank line, not a journal entry"),
        ("not json\n", "<line>:1: not JSON (Expecting value at column 1)"),
        ('{"seq": -1}\n', "<line>:1: seq: expected a whole number at least 0, got -1"),
    ]:
        with pytest.raises(ValueError, match="^" + re.escape(message)):
            entries.entry_from_line(line)


def test_a_bounded_journal_skips_lines_not_its_own_when_reading_its_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text('not json\n{"seq": 1}\n\n[1]\n')  # the file held these before the server
    with path.open("a", encoding="utf-8") as stream:
        journal = Journal(sink=stream, memory=1)
        for _ in range(3):
            journal.append(entry(journal.next_seq(), completed_at=1.0))
        assert [e.seq for e in journal] == [3]
        assert journal.run_entries() == [entry(n, completed_at=1.0) for n in (1, 2, 3)]
        journal.close()


def test_the_read_benchmark_reads_each_shape_each_way(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("bench_check_scaling")
    bench.read_table(["many-jobs", "retry-storm"], 40, 1, time.monotonic() + 60)
    out = capsys.readouterr().out.splitlines()
    ways = ["json+checks", "json+plan", "iter_entries", "not shared", "iter_journal"]
    ways += ["blocks shared", "iter_records", "json.loads", "msgspec"]
    if entries._line_decoder() is None:
        ways.remove("msgspec")
    assert out[2].split() == ["shape", "B/line", *" ".join(ways).split(), "ratio"]
    assert [line.split()[0] for line in out[3:5]] == ["many-jobs", "retry-storm"]
    assert all(len(line.split()) == len(ways) + 3 for line in out[3:5])


# -- records: the decoded structs themselves, for a reader of fields (fakeprovider check) ----

PROPERTIES = ("is_header", "latency", "failed")


def what_it_holds(one: entries.EntryLike) -> tuple[object, ...]:
    """Every field and property of ``one`` as a reader of ``EntryLike`` sees them (a
    Retry-After as its four values), with the types of the values."""
    values: list[object] = [getattr(one, name) for name in FIELD_NAMES + PROPERTIES]
    ra = one.retry_after
    at = FIELD_NAMES.index("retry_after")
    values[at] = None if ra is None else (ra.raw, ra.not_before, ra.header, ra.form)
    return tuple((value, type(value)) for value in values)


def held_and_error(read: Iterator[entries.EntryLike]) -> tuple[list[object], str | None]:
    """What each entry read holds (``what_it_holds``) up to the first error, and the error."""
    held: list[object] = []
    try:
        for one in read:
            held.append(what_it_holds(one))
    except ValueError as exc:
        return held, str(exc)
    return held, None


def records_from_blocks(blocks: list[bytes]) -> Iterator[entries.EntryLike]:
    for batch in entries.record_batches(blocks, "<journal>"):
        yield from batch


def test_records_hold_what_the_entries_of_the_same_lines_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``record_batches`` over journals cut into blocks at random (mutated, blank, CRLF and
    moved-about lines, a BOM, no last line break): the same lines read, each holding the same
    field values (of the same types) and properties as the line-by-line reference's entry,
    the same error after them; ``as_entry`` makes that very entry. With msgspec and without
    (bounded: 4 seconds)."""
    rng = random.Random(1517)
    good = [jsonl_line(sample).encode() for sample in SAMPLES]
    stop = time.monotonic() + 4.0
    tally: Counter[str] = Counter()
    for number in range(2000):
        if time.monotonic() > stop:
            break
        data = journal_of(rng, good)
        if rng.random() < 0.3:
            data = reshaped(rng, data.splitlines(keepends=True) or [b"\n"])
        reference = list(_prefix(reference_reading(io.BytesIO(data), "<journal>")))
        expected = held_and_error(iter(reference[:-1])), reference[-1]
        tally["refused" if reference[-1] else "read"] += 1
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 12))))
        blocks = in_blocks(data, cuts)
        got = list(_prefix(records_from_blocks(blocks)))
        assert (held_and_error(iter(got[:-1])), got[-1]) == expected, (number, cuts)
        assert [entries.as_entry(one) for one in got[:-1]] == reference[:-1], number
        if number % 5 == 0:
            with monkeypatch.context() as patch:
                patch.setattr(entries, "_line_decoder", lambda: None)
                got = list(_prefix(records_from_blocks(blocks)))
                assert {type(one) for one in got[:-1]} <= {Entry}
                assert got == reference, number
    assert tally["read"] > 20
    assert tally["refused"] > 20


def _prefix(read: Iterator[Any]) -> Iterator[Any]:
    """What ``read`` yields up to its first error, then that error's text (None: none)."""
    try:
        yield from read
    except ValueError as exc:
        yield str(exc)
        return
    yield None


def test_a_line_of_the_fakes_shape_is_given_as_its_record(tmp_path: Path) -> None:
    """``iter_records`` gives the lines a block's one msgspec call read as the structs it
    made (not tracked by the collector: they hold no cycle), holding what the ``Entry`` holds;
    ``as_entry`` gives an ``Entry`` back as it is."""
    if entries._line_decoder() is None:  # pragma: no cover - msgspec has a wheel here
        pytest.skip("msgspec is not installed: every line is read as an Entry")
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl(*SAMPLES) * 2)
    read = list(journal.iter_records(path))
    assert [type(one).__name__ for one in read] == ["EntryRecord"] * (2 * len(SAMPLES))
    for one, sample in zip(read, SAMPLES * 2, strict=True):
        assert what_it_holds(one) == what_it_holds(sample)
        assert entries.as_entry(one) == sample
    assert not any(map(gc.is_tracked, read))
    assert entries.as_entry(SAMPLES[1]) is SAMPLES[1]
    assert type(entries.as_entry(read[len(SAMPLES) + 2]).retry_after) is RetryAfterRecord


def test_records_of_a_text_stream_are_its_entries() -> None:
    """A text stream is read line by line (``iter_entries``): its records are ``Entry``s."""
    read = list(journal.iter_records(io.StringIO(jsonl(*SAMPLES))))
    assert read == SAMPLES
    assert {type(one) for one in read} == {Entry}


def test_a_bad_line_in_records_is_named_after_the_records_before_it(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    lines = [jsonl_line(entry(seq)) for seq in range(1, 300)]
    lines[250] = '{"seq": 251, "kind": "status", "received_at": NaN}\n'
    path.write_text("".join(lines))
    got = list(_prefix(journal.iter_records(path)))
    assert [entries.as_entry(one) for one in got[:-1]] == [entry(seq) for seq in range(1, 251)]
    assert got[-1] == (
        f"{path}:251: received_at: expected a finite number (clock seconds), got nan"
    )


def test_records_come_a_block_at_a_time_in_lists(tmp_path: Path) -> None:
    """``iter_record_batches`` gives ``iter_records``'s records in the lists it reads them in,
    a block of the file (64 KiB) at a time, and the entries before a bad line in a list
    before its error; a text stream gives one entry a list."""
    path = tmp_path / "run.jsonl"
    lines = [jsonl_line(entry(seq)) for seq in range(1, 1000)]
    path.write_text("".join(lines))
    batches = list(journal.iter_record_batches(path))
    assert 1 < len(batches) <= path.stat().st_size // (1 << 16) + 2
    assert [entries.as_entry(one) for batch in batches for one in batch] == [
        entry(seq) for seq in range(1, 1000)
    ]
    lines[500] = "{}\n"
    path.write_text("".join(lines))
    *read, error = _prefix(journal.iter_record_batches(path))
    assert [one.seq for batch in read for one in batch] == list(range(1, 501))
    assert error == (
        f"{path}:501: seq: missing; every entry has seq, kind, method, path, client and received_at"
    )
    text = list(journal.iter_record_batches(io.StringIO(jsonl(*SAMPLES))))
    assert text == [[sample] for sample in SAMPLES]


# -- a bounded journal's own file: the lines that are entries, the others skipped ----------


def entries_of_lines(lines: list[str]) -> list[Entry]:
    """The reference: ``entry_from_line`` of each line, those it refuses skipped."""
    out = []
    for line in lines:
        try:
            out.append(entries.entry_from_line(line))
        except ValueError:
            continue
    return out


def test_readable_entries_are_the_lines_entry_from_line_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Text lines of every kind (the fake's, mutated, blank, CRLF, broken in two or joined):
    the entries of those ``entry_from_line`` reads, in order, the others skipped, with
    msgspec and without (bounded: 3 seconds)."""
    rng = random.Random(1518)
    good = [jsonl_line(sample).encode() for sample in SAMPLES]
    stop = time.monotonic() + 3.0
    skipped = 0
    for number in range(2000):
        if time.monotonic() > stop:
            break
        data = journal_of(rng, good)
        if rng.random() < 0.3:
            data = reshaped(rng, data.splitlines(keepends=True) or [b"\n"])
        lines = data.decode("utf-8", "replace").splitlines(keepends=True)
        expected = entries_of_lines(lines)
        skipped += len(lines) - len(expected)
        assert entries.readable_entries(lines) == expected, number
        if number % 5 == 0:
            with monkeypatch.context() as patch:
                patch.setattr(entries, "_line_decoder", lambda: None)
                assert entries.readable_entries(lines) == expected, number
    assert skipped > 50


def test_a_bounded_journal_reads_a_long_file_a_block_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_entries`` reads its file some lines at a time (``_BLOCK`` bytes of them): across
    the edges, lines not its own and a last line being written read as line by line."""
    path = tmp_path / "journal.jsonl"
    mixed = ['{"seq": 1}\n', "\n", "not json\n", jsonl_line(entry(90, completed_at=1.0))]
    path.write_text("".join(mixed * 5))
    monkeypatch.setattr(journal, "_BLOCK", 150)
    with path.open("a", encoding="utf-8") as stream:
        bounded = Journal(sink=stream, memory=1)
        for _ in range(40):
            bounded.append(entry(bounded.next_seq(), completed_at=1.0))
        bounded.flush()
        stream.write(jsonl_line(entry(95, completed_at=1.0)).rstrip("\n"))  # being written
        stream.flush()
        expected = [entry(n, completed_at=1.0) for n in [*range(1, 41), 90]]
        assert bounded.run_entries() == expected
        bounded.close()
