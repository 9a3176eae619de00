"""The fakeprovider command."""

from __future__ import annotations

import argparse
import importlib.util
import json
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from fakeprovider._starter import copy_of, starter
from fakeprovider.cli import build_parser, main
from fakeprovider.dialects import DIALECTS
from fakeprovider.journal import read_journal
from fakeprovider.scenario import bundled_scenarios, dump_schema


@pytest.mark.parametrize(
    "command", ["serve", "validate", "scenarios", "explain", "schema", "new", "check"]
)
def test_every_command_has_help_with_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: fakeprovider {command}")
    assert f"\nexamples:\n  fakeprovider {command}" in out


def test_top_level_help_lists_each_command_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "    scenarios    list the bundled scenarios\n" in out
    assert "    check        check a journal against the client invariants\n" in out


def test_check_refuses_a_journal_without_client_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "run.jsonl"
    empty.write_text("")
    assert main(["check", str(empty)]) == 2
    assert capsys.readouterr().err == (
        f"fakeprovider check: {empty} holds no client request, so nothing was tested;"
        " did the client reach the fake?\n"
    )


def test_validate_passes_good_files_and_lists_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "jobs:\n  - timeline:\n      - status: queued\n      - {at: 3s, after_polls: 1, status: succeeded}\nextra: 1\n"
    )
    good = Path(__file__).parent.parent / "scenarios" / "slow-success.yaml"
    assert main(["validate", "-q", str(good)]) == 0
    assert main(["validate", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert out == (
        f"{bad}:4:9: jobs[0].timeline[1]: a step starts either 'at' a time or 'after_polls' reads, not both\n"
        f"{bad}:5:1: extra: unknown key 'extra'; expected one of: jobs, name, description, dialect, seed, faults, "
        "rate_limit, concurrency, auth, webhooks, expect, max_body_bytes\n"
    )


def test_scenarios_lists_every_bundled_name_with_its_description(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(bundled_scenarios())
    assert lines[-1].split(None, 1)[1] == (
        "A 60 s job whose status reads hit 503, 502 and 500, and whose first download hits 503."
    )


def test_explain_describes_the_timeline_and_faults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "retry-after-seconds"]) == 0
    out = capsys.readouterr().out
    assert "  - overloaded: requests #3, #7 to status: answer 503, with Retry-After: 12\n" in out
    assert "                  at 50s: succeeded\n" in out


def test_explain_of_a_missing_scenario_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "nope"]) == 2
    assert capsys.readouterr().err.startswith(
        "nope: no such file and no bundled scenario named 'nope'"
    )


def test_serve_rejects_an_unknown_dialect(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--dialect", "klingon", "--port", "0"]) == 2
    assert capsys.readouterr().err == (
        f"fakeprovider serve: unknown dialect 'klingon'; known dialects: {', '.join(sorted(DIALECTS))}\n"
    )


def test_serve_suggests_the_dialect_meant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--dialect", "google", "--port", "0"]) == 2
    assert capsys.readouterr().err == (
        "fakeprovider serve: unknown dialect 'google' (did you mean 'google-veo'?); known dialects:"
        f" {', '.join(sorted(DIALECTS))}\n"
    )


def test_serve_suggests_the_bundled_scenario_meant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "slow-succes", "--port", "0"]) == 2
    assert capsys.readouterr().err == (
        "slow-succes: no such file and no bundled scenario named 'slow-succes' (did you mean"
        f" 'slow-success'?); bundled: {', '.join(bundled_scenarios())}\n"
    )


def test_a_mistyped_command_or_choice_gets_a_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serv"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "fakeprovider: error: argument COMMAND: invalid choice: 'serv' (did you mean 'serve'?);"
        " choose from " + ", ".join(repr(name) for name in _commands())
    )
    with pytest.raises(SystemExit):
        main(["serve", "--log-level", "warn"])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "fakeprovider serve: error: argument --log-level: invalid choice: 'warn' (did you mean"
        " 'warning'?); choose from 'critical', 'error', 'warning', 'info', 'debug'"
    )

    with pytest.raises(SystemExit):
        main(["serve", "--http", "h1"])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "fakeprovider serve: error: argument --http: invalid choice: 'h1' (did you mean 'h11'?);"
        " choose from 'auto', 'httptools', 'h11'"
    )


@pytest.mark.parametrize(
    ("option", "package", "fallback"),
    [("--http", "httptools", "h11"), ("--loop", "uvloop", "asyncio")],
)
def test_serve_and_run_refuse_a_fast_package_that_is_not_installed(
    option: str,
    package: str,
    fallback: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    for command in (["serve"], ["run", "slow-success"]):
        with pytest.raises(SystemExit) as exited:
            main([*command, option, package])
        assert exited.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"fakeprovider {command[0]}: error: argument {option}: {package} is not installed"
            f" here; install it (pip install {package}) or use {option} {fallback}"
        )


def test_serve_on_h11_and_asyncio_serves_and_says_so() -> None:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "fakeprovider", "serve", "quick-preview", "--port", "0"),
            *("--http", "h11", "--loop", "asyncio"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        with httpx.Client(base_url=url) as http:
            job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
            assert http.get(f"/v1/jobs/{job}").status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=10)
    assert process.returncode == 0
    assert f" at {url} on h11 + asyncio (Ctrl+C to stop)" in err


def _commands() -> list[str]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_prints_the_url_journals_as_it_goes_and_exits_cleanly(
    tmp_path: Path, sig: signal.Signals
) -> None:
    journal = tmp_path / "journal.jsonl"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fakeprovider",
            "serve",
            "quick-preview",
            "--port",
            "0",
            "--journal",
            str(journal),
            "--time-scale",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=url) as http:
            job = http.post("/v1/jobs", json={"prompt": "x"}).json()
        deadline = time.monotonic() + 5
        while len(journal.read_text().splitlines()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        header, submit = read_journal(journal)
        assert (submit.seq, submit.kind) == (1, "submit")
        assert (header.seq, header.kind, header.method, header.path) == (
            0,
            "admin",
            "RUN",
            "/__admin/start",
        )
        assert header.run is not None
        assert {k: header.run[k] for k in ("scenario", "dialect", "time_scale", "seed")} == {
            "scenario": "quick-preview",
            "dialect": "generic",
            "time_scale": 0.1,
            "seed": 0,
        }
        assert job["poll_after_seconds"] == 0.2
    finally:
        process.send_signal(sig)
        _, err = process.communicate(timeout=10)
    assert process.returncode == 0
    assert "serving 'quick-preview' in the generic dialect, time scale 0.1" in err


def test_check_piped_into_a_reader_that_quits_ends_without_a_traceback(tmp_path: Path) -> None:
    lines = []
    for n in range(1, 1501):  # a job shown done at submit and read again: one violation each
        job = f"job_{n}"
        for seq, kind, path in (
            (2 * n - 1, "submit", "/v1/jobs"),
            (2 * n, "status", f"/v1/jobs/{job}"),
        ):
            lines.append(
                json.dumps(
                    {
                        "seq": seq,
                        "kind": kind,
                        "job_id": job,
                        "method": "POST" if kind == "submit" else "GET",
                        "path": path,
                        "client": "c",
                        "received_at": float(seq),
                        "response_started_at": float(seq),
                        "completed_at": float(seq),
                        "status_code": 202 if kind == "submit" else 200,
                        "job_status": "succeeded",
                    }
                )
            )
    journal = tmp_path / "run.jsonl"
    journal.write_text("\n".join(lines) + "\n")
    with subprocess.Popen(
        [sys.executable, "-m", "fakeprovider", "check", str(journal)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as reader:
        assert reader.stdout is not None
        assert reader.stderr is not None
        assert reader.stdout.readline().startswith(b"1500 invariant violation(s)")
        reader.stdout.close()  # like `| head -1`: the report is far larger than a pipe holds
        assert reader.wait(timeout=60) == 1
        assert reader.stderr.read() == b""


def test_new_writes_a_starter_that_validates_and_names_the_next_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", "my-render"]) == 0
    assert capsys.readouterr().err == (
        "wrote a starter scenario to my-render.yaml; next: fakeprovider explain my-render.yaml\n"
    )
    assert (tmp_path / "my-render.yaml").read_text() == starter("my-render")
    assert main(["validate", "my-render.yaml"]) == 0


def test_new_refuses_to_overwrite_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "sub" / "flaky.yaml"
    assert main(["new", "flaky", "--from", "transient-5xx", "-o", str(target)]) == 0
    assert capsys.readouterr().err == (
        f"wrote a copy of transient-5xx to {target}; next: fakeprovider explain {target}\n"
    )
    target.write_text("# mine\n")
    assert main(["new", "flaky", "-o", str(target)]) == 2
    assert capsys.readouterr().err == (
        f"fakeprovider new: {target} already exists; choose another -o PATH, or --force to"
        " overwrite it\n"
    )
    assert target.read_text() == "# mine\n"
    assert main(["new", "flaky", "-o", str(target), "--force"]) == 0
    assert target.read_text() == starter("flaky")


def test_new_prints_to_standard_output_with_dash(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "preview", "--from", "quick-preview", "-o", "-"]) == 0
    assert capsys.readouterr().out == copy_of("quick-preview", "preview")


def test_new_refuses_a_bad_name_and_a_missing_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "my render", "-o", str(tmp_path / "x.yaml")]) == 2
    assert capsys.readouterr().err == (
        "fakeprovider new: NAME names the scenario and its file: use letters, digits, '.', '_'"
        " and '-', got 'my render'\n"
    )
    assert main(["new", "x", "--from", "slow-succes", "-o", str(tmp_path / "x.yaml")]) == 2
    assert capsys.readouterr().err == (
        "slow-succes: no such file and no bundled scenario named 'slow-succes' (did you mean"
        f" 'slow-success'?); bundled: {', '.join(bundled_scenarios())}\n"
    )
    assert not (tmp_path / "x.yaml").exists()


def test_schema_writes_the_schema_to_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "fakeprovider.schema.json"
    assert main(["schema", "-o", str(target)]) == 0
    assert capsys.readouterr() == ("", f"wrote the scenario schema to {target}\n")
    assert target.read_text() == dump_schema()
    assert json.loads(target.read_text())["$id"] == "urn:fakeprovider:scenario:1"
    assert main(["schema", "-o", str(tmp_path / "missing" / "s.json")]) == 2
    assert capsys.readouterr().err == (
        f"fakeprovider schema: cannot write {tmp_path / 'missing' / 's.json'}: No such file or"
        " directory\n"
    )


def _serve(tmp_path: Path, scenario: str, *options: str) -> subprocess.Popen[str]:
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario)
    return subprocess.Popen(
        [sys.executable, "-m", "fakeprovider", "serve", str(path), "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


DELAYED_READS = """
name: delayed-reads
jobs: [{timeline: [{status: queued}, {at: 1h, status: succeeded}]}]
faults:
  - {name: slow, route: status, delay: 10m}
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_answers_and_journals_the_requests_in_flight_when_stopped(
    tmp_path: Path, sig: signal.Signals
) -> None:
    journal = tmp_path / "journal.jsonl"
    process = _serve(tmp_path, DELAYED_READS, "--journal", str(journal))
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        with httpx.Client(base_url=url, timeout=30) as http, ThreadPoolExecutor(5) as pool:
            job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
            reads = [pool.submit(http.get, f"/v1/jobs/{job}") for _ in range(5)]
            deadline = time.monotonic() + 10  # a bound on waiting, not on how fast it is
            while time.monotonic() < deadline:  # until all five are received, in flight
                if http.get("/__admin/health").json()["journal_entries"] == 6:
                    break
                time.sleep(0.02)
            process.send_signal(sig)
            answers = [read.result() for read in reads]
    finally:
        if process.poll() is None:
            process.send_signal(sig)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert [r.status_code for r in answers] == 5 * [200]
    entries = [e for e in read_journal(journal) if not e.is_header]
    assert [(e.kind, e.status_code, e.fault) for e in entries] == [("submit", 202, None)] + 5 * [
        ("status", 200, "slow")
    ]
    assert "Traceback" not in err


LONG_JOB = "name: long-job\njobs: [{timeline: [{status: queued}, {at: 1h, status: succeeded}]}]\n"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_has_every_answered_request_in_the_journal_when_it_exits_on_a_signal(
    tmp_path: Path, sig: signal.Signals
) -> None:
    journal = tmp_path / "journal.jsonl"
    process = _serve(tmp_path, LONG_JOB, "--journal", str(journal))
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        with httpx.Client(base_url=url, timeout=30) as http:
            job = http.post("/v1/jobs", json={"prompt": "x"}).json()["job_id"]
            answers = [http.get(f"/v1/jobs/{job}").status_code for _ in range(300)]
        process.send_signal(sig)  # at once: the last batch has not been written yet
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert (process.returncode, answers) == (0, 300 * [200]), err
    entries = read_journal(journal)
    assert [e.seq for e in entries] == list(range(302))
    assert [e.kind for e in entries] == ["admin", "submit"] + 300 * ["status"]


def test_serve_refuses_a_journal_it_cannot_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--port", "0", "--journal", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"fakeprovider serve: cannot write the journal {tmp_path}: Is a directory\n"
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_serve_refuses_a_journal_that_cannot_take_the_run_header(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "--port", "0", "--journal", "/dev/full"]) == 2
    assert capsys.readouterr().err == (
        "fakeprovider serve: cannot write the journal /dev/full: No space left on device\n"
    )


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--journal-memory", "0", "expected a whole number of at least 1, got 0"),
        ("--journal-memory", "x", "expected a whole number, got 'x'"),
        ("--idle-timeout", "0", "expected seconds between 0 and 3600, got '0'"),
        ("--idle-timeout", "inf", "expected seconds between 0 and 3600, got 'inf'"),
    ],
)
def test_serve_refuses_bad_limits(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", option, value])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(f"argument {option}: {message}\n")


def test_serve_on_an_address_others_can_reach_makes_up_an_admin_token_and_warns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import fakeprovider.server as server_module

    given: dict[str, object] = {}

    def fake_serve(provider: object, **kwargs: object) -> None:  # binds nothing
        given.update(kwargs)
        on_ready = kwargs["on_ready"]
        assert callable(on_ready)
        on_ready("http://0.0.0.0:8000")

    monkeypatch.setattr(server_module, "serve_forever", fake_serve)
    assert main(["serve", "--host", "0.0.0.0"]) == 0
    token = given["admin_token"]
    assert isinstance(token, str)
    assert len(token) >= 32
    assert capsys.readouterr().err.startswith(
        "fakeprovider serve: warning: 0.0.0.0 is not a loopback address, so anyone who can reach"
        " it can use the fake; the admin API wants 'Authorization: Bearer <token>' (token:"
        f" {token})\n"
    )
    assert main(["serve", "--admin-token", "s3cret"]) == 0
    assert given["admin_token"] == "s3cret"
    assert main(["serve"]) == 0  # loopback: no token unless given
    assert given["admin_token"] is None
