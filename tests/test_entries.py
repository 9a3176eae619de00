"""Malformed journals: ``check`` names the line and the field (exit 2), never a traceback.

A fuzz pass over thousands of generated journals (mutations of a journal the fake could have
written) keeps it so: every one is either refused with ``FILE:LINE: ...`` or judged without
an exception. Any other failure of a command is an internal error: exit 3, one line.
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from fakeprovider import cli
from fakeprovider.cli import main
from fakeprovider.entries import _FIELDS
from fakeprovider.invariants import check
from fakeprovider.journal import Entry, read_journal

SUBMIT: dict[str, Any] = {
    "seq": 1,
    "kind": "submit",
    "job_id": "j_1",
    "method": "POST",
    "path": "/v1/jobs",
    "client": "c",
    "received_at": 0.0,
    "response_started_at": 0.01,
    "completed_at": 0.01,
    "status_code": 202,
    "job_status": "queued",
    "poll_after": 5.0,
    "request_digest": "d1",
    "idempotency_key": "k-1",
}
BASE: list[dict[str, Any]] = [
    {
        "seq": 0,
        "kind": "admin",
        "method": "POST",
        "path": "/__admin/reset",
        "client": "fakeprovider",
        "received_at": 0.0,
        "run": {"scenario": "x", "time_scale": 1.0, "limits": {"max_retries": 2}},
    },
    SUBMIT,
    {
        **SUBMIT,
        "seq": 2,
        "kind": "status",
        "method": "GET",
        "path": "/v1/jobs/j_1",
        "received_at": 1.0,
        "response_started_at": 1.0,
        "completed_at": 1.0,
        "status_code": 503,
        "retry_after": {"raw": "2", "not_before": 3.0, "header": "retry-after", "form": "seconds"},
        "fault": "flaky",
    },
    {
        **SUBMIT,
        "seq": 3,
        "kind": "list",
        "job_id": None,
        "method": "GET",
        "received_at": 4.0,
        "status_code": 200,
        "listed": {"j_1": "processing"},
    },
    {
        "seq": 4,
        "kind": "webhook",
        "job_id": "j_1",
        "method": "POST",
        "path": "/hook",
        "client": "127.0.0.1:9",
        "received_at": 9.0,
        "completed_at": 9.1,
        "status_code": 200,
        "event": "job.succeeded",
        "webhook_id": "msg_1",
        "attempt": 1,
        "delivery": None,
    },
    {
        **SUBMIT,
        "seq": 5,
        "kind": "status",
        "method": "GET",
        "received_at": 10.0,
        "response_started_at": 10.0,
        "completed_at": 10.0,
        "status_code": 200,
        "job_status": "succeeded",
        "true_status": "succeeded",
        "status_since": 8.0,
    },
    {**SUBMIT, "seq": 6, "kind": "content", "method": "GET", "received_at": 11.0},
]


def lines(entries: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(x).encode() + b"\n" for x in entries)


def run_check(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    path = tmp_path / "run.jsonl"
    path.write_bytes(content)
    code = main(["check", str(path)])
    return code, capsys.readouterr().err.replace(str(path), "run.jsonl")


def test_every_entry_field_has_a_check() -> None:
    assert set(_FIELDS) == {f.name for f in dataclasses.fields(Entry)}


def test_the_base_journal_is_a_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_check(tmp_path, lines(BASE), capsys)[0] in (0, 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"retry_after": 5},
            "run.jsonl:3: retry_after: expected an object with 'raw' and 'not_before', or null,"
            " got 5",
        ),
        (
            {"received_at": "x"},
            'run.jsonl:3: received_at: expected a finite number (clock seconds), got "x"',
        ),
        (
            {"received_at": None},
            "run.jsonl:3: received_at: expected a finite number (clock seconds), got null",
        ),
        (
            {"status_code": "200"},
            'run.jsonl:3: status_code: expected an HTTP status code (100 to 999) or null, got "200"',
        ),
        (
            {"seq": True},
            "run.jsonl:3: seq: expected a whole number at least 0, got true",
        ),
        (
            {"kind": "poll"},
            "run.jsonl:3: kind: expected one of 'submit', 'status', 'content', 'cancel', 'list',"
            " 'webhook', 'admin', 'unknown', got \"poll\"",
        ),
        (
            {"retry_after": {"raw": "2"}},
            "run.jsonl:3: retry_after.not_before: missing; a Retry-After has raw and not_before",
        ),
        (
            {"retry_after": {"raw": "2", "not_before": [1]}},
            "run.jsonl:3: retry_after.not_before: expected a finite number (clock seconds) or"
            " null, got an array",
        ),
        ({"colour": "red"}, "run.jsonl:3: colour: not a journal field"),
        (
            {"listed": {"j_1": 3}},
            "run.jsonl:3: listed.j_1: expected a status (a string), got 3",
        ),
        (
            {"run": {"time_scale": 0}},
            "run.jsonl:3: run.time_scale: expected a positive number, got 0",
        ),
    ],
)
def test_a_bad_field_exits_2_naming_the_line_and_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    bad = [*BASE[:2], {**BASE[2], **change}, *BASE[3:]]
    assert run_check(tmp_path, lines(bad), capsys) == (2, f"fakeprovider check: {message}\n")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{not json", "not JSON (Expecting property name enclosed in double quotes at column 2)"),
        (b'{"seq": 1', "not JSON (Expecting ',' delimiter at column 11)"),
        (b'{"seq": NaN}', "seq: expected a whole number at least 0, got nan"),
        (b'{"seq": 1e400}', "seq: expected a whole number at least 0, got inf"),
        (b'{"seq": ' + b"9" * 5000 + b"}", "not JSON (Exceeds the limit (4300 digits) for"),
        (b"[" * 100_000 + b"]" * 100_000, "not a journal entry: JSON nested too deeply"),
        (b"[1, 2]", "expected a JSON object (a journal entry), got an array"),
        (b'"text"', 'expected a JSON object (a journal entry), got "text"'),
        (b"\x00\xff\xfe binary", "not UTF-8 text (byte 0xff at column 2); a journal is JSON lines"),
    ],
    ids=["not-json", "cut", "nan", "inf", "long-int", "deep", "array", "string", "binary"],
)
def test_a_line_that_is_not_an_entry_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: bytes, message: str
) -> None:
    code, err = run_check(tmp_path, lines(BASE[:2]) + line + b"\n" + lines(BASE[2:]), capsys)
    assert code == 2
    assert err.startswith(f"fakeprovider check: run.jsonl:3: {message}")
    assert err.count("\n") == 1


def test_a_missing_field_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {k: v for k, v in BASE[2].items() if k != "client"}
    assert run_check(tmp_path, lines([*BASE[:2], bad]), capsys) == (
        2,
        "fakeprovider check: run.jsonl:3: client: missing; every entry has seq, kind, method,"
        " path, client and received_at\n",
    )


def test_stdin_is_read_as_bytes_and_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(lines(BASE[:2]) + b"\xff\n"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    assert main(["check", "-"]) == 2
    assert capsys.readouterr().err == (
        "fakeprovider check: <stdin>:3: not UTF-8 text (byte 0xff at column 1); a journal is"
        " JSON lines\n"
    )


def test_an_internal_error_exits_3_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("boom\nsecond line")

    monkeypatch.setattr("fakeprovider._check_cli.check", broken)
    monkeypatch.setattr("fakeprovider._stream.check_stream", broken)
    code, err = run_check(tmp_path, lines(BASE), capsys)
    assert code == 3
    assert err == (
        "fakeprovider check: internal error (KeyError: 'boom\\nsecond line'); this is a bug in"
        " fakeprovider, please report it with the command line (FAKEPROVIDER_DEBUG=1 shows the"
        " traceback)\n"
    )
    assert cli.internal_error(None, RecursionError()) == (
        "fakeprovider: internal error (RecursionError); this is a bug in fakeprovider, please"
        " report it with the command line (FAKEPROVIDER_DEBUG=1 shows the traceback)"
    )


# -- fuzz -------------------------------------------------------------------------------------

_VALUES: list[Any] = [
    5,
    -1,
    0,
    1.5,
    -1e300,
    1e300,
    10**30,
    "x",
    "",
    "NaN",
    True,
    False,
    None,
    [],
    [1],
    {},
    {"raw": "1"},
    {"raw": "1", "not_before": "x"},
    {"raw": "1", "not_before": 2, "form": "imf"},
    {"j_1": "succeeded", "j_9": "failed"},
    {"limits": {"max_retries": "x"}},
    {"limits": {"deadline": -1}},
    {"limits": {"status_rate": 1e308, "status_rate_window": 1e-300}},
    {"time_scale": "fast"},
    "succeeded",
    "submit",
    "webhook",
    "status",
    "forged",
    "too_many_active_jobs",
]
_GARBAGE = [b"{", b"}", b"null", b"[]", b"\xff", b"\x00", b'{"seq":', b"NaN", b"Infinity"]


def _mutate(rng: random.Random, journal: list[dict[str, Any]]) -> bytes:
    out = [dict(entry) for entry in journal]
    for _ in range(rng.randint(1, 4)):
        entry = rng.choice(out)
        choice = rng.random()
        key = rng.choice([*entry, "retry_after", "listed", "run", "attempt", "extra"])
        if choice < 0.45:
            entry[key] = rng.choice(_VALUES)
        elif choice < 0.6:
            entry.pop(key, None)
        elif choice < 0.8:  # a valid-looking number: times out of order, ties, negatives
            entry[key] = rng.choice([0, 1, 2, 3.5, -5, 10.0, 1e9, 100, 429, 503, 401])
        elif choice < 0.9:
            out.append(dict(rng.choice(out)))  # a repeated entry (same seq)
        else:
            out.insert(rng.randrange(len(out) + 1), {"raw_line": rng.choice(_GARBAGE)})
    parts = []
    for entry in out:
        raw = entry.get("raw_line")
        parts.append(raw if isinstance(raw, bytes) else json.dumps(entry).encode())
    data = b"\n".join(parts) + b"\n"
    if rng.random() < 0.1:
        cut = rng.randrange(len(data))
        data = data[:cut] + bytes([rng.randrange(256)]) + data[cut + 1 :]
    return data


def test_fuzzed_journals_are_refused_with_a_line_or_judged_never_a_crash() -> None:
    """Thousands of mutated journals (bounded: 3,000 of them or 4 seconds)."""
    rng = random.Random(14)
    stop = time.monotonic() + 4.0
    refused = judged = 0
    for number in range(3000):
        if time.monotonic() > stop:
            break
        data = _mutate(rng, BASE)
        try:
            entries = read_journal(io.BytesIO(data))
        except ValueError as exc:
            text = str(exc)
            assert text.startswith("<journal>:"), (number, data, text)
            assert "\n" not in text
            refused += 1
            continue
        try:
            report = check(entries)
            report.render()
            json.dumps(report.to_dict())
        except Exception as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(
                f"journal #{number} crashed the checker: {exc!r}\n{data.decode(errors='replace')}"
            )
        judged += 1
    assert refused > 100
    assert judged > 100
