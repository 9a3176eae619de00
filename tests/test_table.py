"""The journal as a table: ``fakeprovider journal``, ``serve --log-requests``, the plugin's timeline."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from fakeprovider._cli_options import request_logger
from fakeprovider.cli import main
from fakeprovider.clock import VirtualClock
from fakeprovider.provider import FakeProvider
from fakeprovider.server import ServerThread

from .test_cli_check import served
from .test_invariants import e, ra


def test_the_journal_command_prints_each_run_as_a_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = served(
        tmp_path / "j.jsonl",
        "quick-preview",
        [
            e(1, "submit", 0.0, code=202, status="queued"),
            e(2, "status", 2.0, code=503, retry_after=ra("1", 3.01), fault="busy"),
            e(3, "status", 4.0, status="succeeded"),
        ],
    )
    served(path, "transient-5xx", [e(1, "status", 1.5, code=404, error_code="job_not_found")])
    assert main(["journal", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run of 'quick-preview' (sha256:")
    assert lines[0].endswith(
        ") in the generic dialect, time scale 1.0, seed 0, fakeprovider 0.1.0, started"
        " 2026-01-01T00:00:00.000Z"
    )
    assert lines[1:4] == [
        "  #1        0.000s  POST /v1/jobs -> 202  queued",
        "  #2        2.000s  GET /v1/jobs/j_1 -> 503  Retry-After: 1, fault busy",
        "  #3        4.000s  GET /v1/jobs/j_1 -> 200  succeeded",
    ]
    assert lines[4].startswith("run of 'transient-5xx' (sha256:")
    assert lines[5:] == ["  #1        1.500s  GET /v1/jobs/j_1 -> 404  job_not_found"]


def test_the_journal_command_refuses_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["journal", str(tmp_path / "none.jsonl")]) == 2
    assert capsys.readouterr().err == (
        f"fakeprovider journal: cannot read {tmp_path / 'none.jsonl'}: No such file or directory\n"
    )


def test_the_journal_command_refuses_a_closed_standard_input_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["journal", "-"]) == 2
    assert capsys.readouterr().err == (
        "fakeprovider journal: cannot read -: standard input is closed\n"
    )


def test_request_lines_are_printed_as_requests_are_answered() -> None:
    stream = io.StringIO()
    provider = FakeProvider(
        "quick-preview", clock=VirtualClock(), journal_listener=request_logger(stream)
    )
    with ServerThread(provider) as server, httpx.Client(base_url=server.url) as http:
        job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
        http.get(f"/v1/jobs/{job}")
        http.get("/v1/jobs/nope")
    assert stream.getvalue().splitlines() == [
        "  #1        0.000s  POST /v1/jobs -> 202  queued",
        f"  #2        0.000s  GET /v1/jobs/{job} -> 200  queued",
        "  #3        0.000s  GET /v1/jobs/nope -> 404  job_not_found",
    ]


def test_serve_logs_requests_and_writes_the_ready_file(tmp_path: Path) -> None:
    ready = tmp_path / "ready" / "url"
    ready.parent.mkdir()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "fakeprovider", "serve", "quick-preview", "--port", "0"),
            *("--log-requests", "--ready-file", str(ready)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not ready.exists():
            assert time.monotonic() < deadline, "no ready file"
            time.sleep(0.02)
        url = ready.read_text()
        assert url.endswith("\n")
        httpx.post(url.strip() + "/v1/jobs", json={"prompt": "x"})
    finally:
        process.terminate()
        out, err = process.communicate(timeout=20)
    assert out == url
    assert err.splitlines()[0].startswith("fakeprovider 0.1.0: serving 'quick-preview' ")
    assert any(line.endswith("POST /v1/jobs -> 202  queued") for line in err.splitlines())
    assert not ready.exists()  # removed on exit: a stale file never points at a dead server


def test_request_log_names_each_later_run_and_times_it_from_its_start() -> None:
    stream = io.StringIO()
    clock = VirtualClock()
    provider = FakeProvider("quick-preview", clock=clock, journal_listener=request_logger(stream))
    with ServerThread(provider) as server, httpx.Client(base_url=server.url) as http:
        http.get("/v1/jobs/nope")
        clock.advance(7)
        provider.reset()
        clock.advance(2)
        http.get("/v1/jobs/nope")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "  #1        0.000s  GET /v1/jobs/nope -> 404  job_not_found"
    assert lines[1].startswith("run of 'quick-preview' (sha256:")
    assert lines[2] == "  #3        2.000s  GET /v1/jobs/nope -> 404  job_not_found"
    assert len(lines) == 3
