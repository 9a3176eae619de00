"""``fakeprovider check`` and ``GET /__admin/report``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from fakeprovider.cli import main
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import load_scenario
from fakeprovider.server import ServerThread

from .test_invariants import e


def write(path: Path, entries) -> Path:
    path.write_text("".join(json.dumps(x.to_dict()) + "\n" for x in entries), encoding="utf-8")
    return path


CLEAN = [
    e(1, "submit", 0.0, status="queued", poll_after=5.0),
    e(2, "status", 6.0, status="succeeded"),
]


def test_a_clean_journal_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(write(tmp_path / "j.jsonl", CLEAN))]) == 0
    assert capsys.readouterr().out.startswith(
        "no invariant violations in 2 request(s) from 1 client(s)\n"
    )


def test_violations_exit_1_and_limits_come_from_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "j.jsonl", [*CLEAN, e(3, "cancel", 70.0)])
    assert main(["check", str(path), "--deadline", "1m", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [v["message"] for v in report["violations"]] == [
        "cancel #3 for job j_1 at 70.000 s came 10.000 s after the deadline of 60.000 s from #1 at"
        " 0.000 s (slack 1.000 s)"
    ]
    assert report["limits"]["deadline"] == 60.0
    assert main(["check", str(path)]) == 0  # no deadline, nothing to break


def test_the_scenario_sets_the_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "j.jsonl", [*CLEAN, e(3, "cancel", 400.0)])
    assert main(["check", str(path), "--scenario", "slow-success"]) == 1
    assert "deadline: cancel #3 for job j_1 at 400.000 s" in capsys.readouterr().out


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "missing.jsonl")]) == 2
    assert capsys.readouterr().err == (
        f"fakeprovider check: cannot read {tmp_path / 'missing.jsonl'}: No such file or directory\n"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(CLEAN[0].to_dict()) + "\n{not json\n", encoding="utf-8")
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"fakeprovider check: {bad}:2: not JSON (Expecting property name enclosed in double"
        " quotes at column 2); each line must be one journal entry\n"
    )
    good = write(tmp_path / "j.jsonl", CLEAN)
    assert main(["check", str(good), "--max-retries", "many"]) == 2
    assert (
        capsys.readouterr().err
        == "fakeprovider check: limit max_retries must be a whole number, got 'many'\n"
    )


def test_admin_report_serves_the_same_json_with_limits_as_query_parameters() -> None:
    scenario = load_scenario("quick-preview")
    with ServerThread(FakeProvider(scenario)) as server, httpx.Client(base_url=server.url) as http:
        job = http.post("/v1/jobs", json={"prompt": "x"}, headers={"X-Client-Id": "me"}).json()
        http.get(f"/v1/jobs/{job['job_id']}", headers={"X-Client-Id": "me"})
        report = http.get("/__admin/report", params={"max_retries": "2", "deadline": "10s"}).json()
        assert report["ok"] is False  # the read came sooner than the 2 s hint
        assert [v["invariant"] for v in report["violations"]] == ["honours_poll_after"]
        assert (report["limits"]["max_retries"], report["limits"]["deadline"]) == (2, 10.0)
        bad = http.get("/__admin/report", params={"deadline": "soon"})
        assert (bad.status_code, bad.json()["error"]["message"]) == (
            400,
            "limit deadline must be a duration like '90s', got 'soon'.",
        )


# -- the run header ----------------------------------------------------------------------------


def served(path: Path, scenario: str, entries, *, time_scale: float = 1.0) -> Path:
    """``path`` with what a server process appends: its run header, then ``entries``."""
    from fakeprovider.clock import VirtualClock

    with path.open("a", encoding="utf-8") as sink:
        FakeProvider(scenario, clock=VirtualClock(), time_scale=time_scale, journal_sink=sink)
        sink.writelines(json.dumps(x.to_dict()) + "\n" for x in entries)
    return path


# deadline-expiry expects a 2 m deadline: at time scale 0.01, 1.2 s (+1 s slack)
LATE = [
    e(1, "submit", 0.0, status="queued", poll_after=0.05),
    e(2, "status", 0.5, status="processing", poll_after=0.05),
    e(3, "status", 5.0, status="processing", poll_after=0.05),
]


def test_check_takes_the_limits_from_the_run_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = served(tmp_path / "j.jsonl", "deadline-expiry", LATE, time_scale=0.01)
    assert main(["check", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [v["invariant"] for v in report["violations"]] == ["deadline"]
    assert report["limits"]["deadline"] == pytest.approx(1.2)
    # the trap: --scenario without --time-scale now takes the header's time scale
    assert main(["check", str(path), "--scenario", "deadline-expiry"]) == 1
    assert capsys.readouterr().err == ""
    # options still override the header
    assert main(["check", str(path), "--deadline", "1h"]) == 0
    assert main(["check", str(path), "--scenario", "deadline-expiry", "--time-scale", "1"]) == 0


def test_runs_appended_by_separate_processes_are_judged_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = [
        e(1, "submit", 0.0, status="queued", poll_after=1.0),
        e(2, "status", 2.0, status="succeeded"),
        e(3, "content", 3.0),
    ]
    path = tmp_path / "j.jsonl"
    served(path, "quick-preview", run)
    served(path, "quick-preview", run)  # seq starts at 1 again, job ids repeat
    assert main(["check", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["metrics"]["runs"], report["metrics"]["requests"]) == (2, 6)
    # without headers the two processes' entries interleave by seq: that was the false alarm
    bare = write(tmp_path / "bare.jsonl", [*run, *run])
    assert main(["check", str(bare)]) == 1


def test_each_run_is_judged_by_its_own_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = served(tmp_path / "j.jsonl", "slow-success", LATE)  # no deadline at time scale 1
    served(path, "deadline-expiry", LATE, time_scale=0.01)
    assert main(["check", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(v["invariant"], v["run"]) for v in report["violations"]] == [("deadline", 1)]


def test_a_journal_without_header_checks_as_before_and_warns_about_the_time_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "old.jsonl", LATE)
    assert main(["check", str(path)]) == 0
    assert main(["check", str(path), "--scenario", "deadline-expiry"]) == 0
    assert capsys.readouterr().err == (
        f"fakeprovider check: warning: {path} has no run header (it was written by an older"
        " fakeprovider), so 'deadline-expiry' is taken at time scale 1; pass --time-scale F if"
        " it was served at another\n"
    )
    assert main(["check", str(path), "--scenario", "deadline-expiry", "--time-scale", "0.01"]) == 1


def test_a_run_header_with_bad_limits_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = served(tmp_path / "j.jsonl", "slow-success", CLEAN)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["run"]["limits"]["max_retries"] = -1
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert main(["check", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"fakeprovider check: the run header of {path} holds bad limits: limit max_retries"
        " must not be negative, got -1\n"
    )


def test_run_as_the_program_check_ends_the_process_with_what_main_prints_and_returns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m fakeprovider check`` ends the process itself once its report is out
    (``_check_cli._exit``): the same output, flushed, and the same exit status as ``main``
    called in process, streamed from a file or read whole from standard input."""
    late = write(tmp_path / "old.jsonl", LATE)
    violating = write(tmp_path / "j.jsonl", [*CLEAN, e(3, "cancel", 70.0)])
    cases = [
        ([str(violating), "--deadline", "1m"], b""),
        ([str(violating), "--deadline", "1m", "--json"], b""),
        ([str(violating)], b""),
        ([str(late), "--scenario", "deadline-expiry"], b""),  # a warning on stderr
        (["-", "--deadline", "1m", "--format", "junit"], violating.read_bytes()),
        ([str(tmp_path / "missing.jsonl")], b""),
    ]
    for argv, given in cases:
        child = subprocess.run(
            [sys.executable, "-m", "fakeprovider", "check", *argv],
            input=given,
            capture_output=True,
            timeout=120,
            check=False,
        )
        if given:
            with pytest.MonkeyPatch.context() as patched:
                patched.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(given)))
                code = main(["check", *argv])
        else:
            code = main(["check", *argv])
        printed = capsys.readouterr()
        assert (child.returncode, child.stdout.decode(), child.stderr.decode()) == (
            code,
            printed.out,
            printed.err,
        )
    # it ended there: the program's atexit handler never ran (it does once main returns)
    outputs = [
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import atexit, sys; from fakeprovider.cli import main;"
                f" atexit.register(print, 'at exit'); sys.exit(main({given}))",
                *("check", str(violating)),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        for given in ("", "sys.argv[1:]")
    ]
    assert [(out.returncode, out.stdout) for out in outputs] == [
        (0, outputs[0].stdout),
        (0, outputs[0].stdout + "at exit\n"),
    ]
    assert "at exit" not in outputs[0].stdout


@pytest.mark.parametrize(("measuring", "ends_at_once"), [("object()", False), ("None", True)])
def test_run_as_the_program_under_coverage_check_returns_so_that_coverage_saves_its_data(
    tmp_path: Path, measuring: str, ends_at_once: bool
) -> None:
    """coverage.py saves what it measured at exit (``atexit``), which ending the process at
    once would skip: while a ``coverage.Coverage.current()`` measures, the program returns."""
    violating = write(tmp_path / "j.jsonl", [*CLEAN, e(3, "cancel", 70.0)])
    stub = tmp_path / "stub" / "coverage"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(
        f"class Coverage:\n    @staticmethod\n    def current():\n        return {measuring}\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(stub.parent)!r}); import atexit, coverage;"
            " from fakeprovider.cli import main; atexit.register(print, 'at exit');"
            " sys.exit(main())",
            *("check", str(violating)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (out.returncode, out.stdout.endswith("at exit\n")) == (0, not ends_at_once)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("end", ["program", "in process"])
def test_a_report_that_standard_output_cannot_take_is_an_error_of_the_output_not_a_bug(
    tmp_path: Path, end: str
) -> None:
    """A full disk under the report (``> /dev/full``): exit 2 with the output's error, not
    exit 3 and "this is a bug", whether ``check`` ends the process itself or returns."""
    violating = write(tmp_path / "j.jsonl", [*CLEAN, e(3, "cancel", 70.0)])
    given = "" if end == "program" else "sys.argv[1:]"
    with open("/dev/full", "wb") as full:
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sys; from fakeprovider.cli import main; sys.exit(main({given}))",
                *("check", str(violating), "--deadline", "1m", "--json"),
            ],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    assert (child.returncode, child.stderr.decode()) == (
        2,
        "fakeprovider check: cannot write its output: No space left on device\n",
    )
