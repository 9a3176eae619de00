"""``fakeprovider run SCENARIO -- COMMAND``: serve, run the command, check, stop, say what failed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest

from fakeprovider.cli import main
from fakeprovider.journal import read_journal

NODE = shutil.which("node")
NODE_CLIENT = str(Path(__file__).with_name("node_client.js"))
needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")

# A client in one line: a submit to FAKEPROVIDER_URL, then exit with the given status.
SUBMIT = (
    "import json, os, sys, urllib.request as u;"
    "r = u.Request(os.environ['FAKEPROVIDER_URL'] + '/v1/jobs', data=b'{\"prompt\": \"x\"}',"
    " headers={'content-type': 'application/json'});"
    "print(json.load(u.urlopen(r))['status']);"
    "print(os.environ['FAKEPROVIDER_JOURNAL']);"
    "sys.exit(int(sys.argv[1]))"
)


def py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


@needs_node
def test_a_careful_node_client_passes(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "run.jsonl"
    junit = tmp_path / "report.xml"
    html = tmp_path / "report.html"
    status = main(
        [
            "run",
            "transient-5xx",
            "--time-scale",
            "0.02",
            "--journal",
            str(journal),
            "--junit",
            str(junit),
            "--report-html",
            str(html),
            "--",
            str(NODE),
            NODE_CLIENT,
        ]
    )
    out, err = capfd.readouterr()
    assert status == 0, err
    assert "job job_" in out
    assert out.splitlines()[1].startswith("no invariant violations in ")
    assert err.splitlines()[-1].startswith(
        "fakeprovider run: the command succeeded and no invariant was broken ("
    )
    entries = read_journal(journal)
    assert entries[0].run is not None
    assert entries[0].run["scenario"] == "transient-5xx"
    assert {e.client for e in entries if e.kind != "admin"} == {"node"}
    suite = ElementTree.parse(junit).getroot()[0]
    assert (suite.attrib["tests"], suite.attrib["failures"]) == ("12", "0")
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@needs_node
def test_a_hasty_node_client_fails_naming_the_rule(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    status = main(
        [
            "run",
            "quick-preview",
            "--time-scale",
            "0.05",
            "--report-json",
            str(report),
            "--",
            str(NODE),
            NODE_CLIENT,
            "--hasty",
        ]
    )
    _, err = capfd.readouterr()
    assert status == 1
    last = err.splitlines()[-1]
    assert last.startswith("fakeprovider run: ")
    assert " invariant violation(s): honours_poll_after x" in last
    assert json.loads(report.read_text())["ok"] is False


def test_a_failing_command_fails_the_run_and_says_so(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "quick-preview", "--", *py(SUBMIT, "3")]) == 1
    out, err = capfd.readouterr()
    assert out.splitlines()[0] == "queued"
    assert err.splitlines()[-1] == "fakeprovider run: the command failed (exit status 3)"


def test_the_command_gets_the_url_and_the_journal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "j.jsonl"
    assert main(["run", "quick-preview", "--journal", str(journal), "--", *py(SUBMIT, "0")]) == 0
    out, _ = capfd.readouterr()
    assert out.splitlines()[1] == str(journal.resolve())
    assert [e.kind for e in read_journal(journal)] == ["admin", "submit"]


def test_a_command_that_makes_no_request_fails(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "quick-preview", "--", *py("pass")]) == 1
    err = capfd.readouterr().err
    assert err.splitlines()[-1].startswith(
        "fakeprovider run: the command made no request to the fake at http://127.0.0.1:"
    )
    assert err.endswith(", so nothing was tested; does it read FAKEPROVIDER_URL?\n")


def test_a_command_that_runs_too_long_is_stopped(capfd: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["run", "quick-preview", "--timeout", "0.5", "--", *py("import time; time.sleep(30)")])
        == 1
    )
    err = capfd.readouterr().err
    assert "fakeprovider run: the command did not end within 0.5 s and was stopped\n" in err


def test_bad_usage_exits_2(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "quick-preview"]) == 2
    assert capfd.readouterr().err == (
        "fakeprovider run: no command given; usage: fakeprovider run SCENARIO [options] --"
        " COMMAND [ARGS...]\n"
    )
    assert main(["run", "quick-preview", "--", "no-such-command-fakeprovider"]) == 2
    assert capfd.readouterr().err.splitlines()[-1] == (
        "fakeprovider run: cannot run 'no-such-command-fakeprovider': No such file or directory"
    )
    assert main(["run", "no-such-scenario", "--", "true"]) == 2
    assert "no bundled scenario named 'no-such-scenario'" in capfd.readouterr().err


def test_a_taken_port_is_reported_not_waited_for(capfd: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["run", "quick-preview", "--port", str(port), "--", "true"]) == 2
    assert capfd.readouterr().err == (
        f"fakeprovider run: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_stops_the_command_and_the_server(
    tmp_path: Path, sig: signal.Signals
) -> None:
    pidfile = tmp_path / "pid"
    code = (
        "import os, sys, time; open(sys.argv[1], 'w').write("
        "str(os.getpid()) + ' ' + os.environ['FAKEPROVIDER_URL']); time.sleep(60)"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fakeprovider",
            "run",
            "quick-preview",
            "--",
            *py(code, str(pidfile)),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not pidfile.exists() or " " not in pidfile.read_text():
            assert time.monotonic() < deadline, "the command did not start"
            time.sleep(0.02)
        pid, url = pidfile.read_text().split()
        process.send_signal(sig)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:  # pragma: no cover - only when the test fails
            process.kill()
    assert process.returncode == 130
    assert (
        err.splitlines()[-1]
        == "fakeprovider run: interrupted; the command and the server were stopped"
    )
    assert not _pid_alive(int(pid))
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listens any more


# run, with the signal sent to itself the moment the command has started: before the fix it
# came before run was ready to end the command (SIGTERM ended run alone, SIGINT raised a
# traceback) and the command was left running; a loaded machine hit that window now and then.
SIGNAL_AT_START = """
import os, subprocess, sys
from fakeprovider.cli import main

real = subprocess.Popen
COMMAND = "import time; time.sleep(60)"


def popen(*args, **kwargs):
    process = real(*args, **kwargs)
    if COMMAND not in (args[0] if args else kwargs.get("args", ())):  # not run's command
        return process
    subprocess.Popen = real  # the command only (stopping the server may start others)
    with open(sys.argv[2], "w") as out:
        out.write(str(process.pid))
    os.kill(os.getpid(), int(sys.argv[1]))
    return process


subprocess.Popen = popen
sys.exit(main(["run", "quick-preview", "--", sys.executable, "-c", COMMAND]))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_as_the_command_starts_stops_the_command_and_the_server(
    tmp_path: Path, sig: signal.Signals
) -> None:
    pidfile = tmp_path / "pid"
    done = subprocess.run(
        py(SIGNAL_AT_START, str(int(sig)), str(pidfile)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert (
        done.stderr.splitlines()[-1]
        == "fakeprovider run: interrupted; the command and the server were stopped"
    )
    assert not _pid_alive(int(pidfile.read_text()))


def test_an_unknown_dialect_is_refused_with_the_closest(capfd: pytest.CaptureFixture[str]) -> None:
    from fakeprovider.dialects import DIALECTS

    assert main(["run", "quick-preview", "--dialect", "lumma", "--", sys.executable, "-V"]) == 2
    assert capfd.readouterr().err == (
        "fakeprovider run: unknown dialect 'lumma' (did you mean 'luma'?); known dialects:"
        f" {', '.join(sorted(DIALECTS))}\n"
    )
