"""The CI kit: the GitHub composite action's step and the plain shell recipe, driven the way CI
runs them (bash, with a Node.js client), against this checkout's ``fakeprovider``."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

from fakeprovider.journal import read_journal

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "ci" / "github-action"
NODE = shutil.which("node")
NODE_CLIENT = str(Path(__file__).with_name("node_client.js"))

pytestmark = pytest.mark.skipif(
    NODE is None or shutil.which("bash") is None, reason="needs bash and Node.js"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``fakeprovider`` is this checkout's, with GitHub's files in tmp."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "fakeprovider"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m fakeprovider "$@"\n')
    shim.chmod(0o755)
    (tmp_path / "output").touch()
    (tmp_path / "env").touch()
    pythonpath = os.pathsep.join([str(ROOT), str(ROOT / "pytest_plugin")])
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FP_", "GITHUB_"))}
    return {
        **base,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": pythonpath,
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_ENV": str(tmp_path / "env"),
    }


def outputs(path: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in Path(path).read_text().splitlines())


def step(env: dict[str, str], **fp: str) -> subprocess.CompletedProcess[str]:
    variables = {f"FP_{name.upper()}": value for name, value in fp.items()}
    return subprocess.run(
        ["bash", str(ACTION / "fakeprovider.sh")],
        env={**env, **variables},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_action_declares_its_inputs_and_runs_the_script() -> None:
    action = yaml.safe_load((ACTION / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {
        "scenario",
        "command",
        "start-only",
        "dialect",
        "time-scale",
        "seed",
        "journal",
        "junit",
        "report-html",
        "check-options",
        "install",
    }
    assert set(action["outputs"]) == {"url", "journal", "pid"}
    run = action["runs"]["steps"][-1]
    assert run["run"] == 'bash "$GITHUB_ACTION_PATH/fakeprovider.sh"'
    script = (ACTION / "fakeprovider.sh").read_text()
    for variable in run["env"]:
        assert f"${{{variable}" in script, f"{variable} is passed but never read"
    for name in action["inputs"]:
        if name != "install":
            assert f"inputs.{name}" in str(run["env"].values())
    workflow = yaml.safe_load((ACTION / "example-workflow.yml").read_text())
    assert set(workflow["jobs"]) == {"fake-provider", "start-only"}


def test_the_action_runs_a_careful_node_client(tmp_path: Path, env: dict[str, str]) -> None:
    done = step(
        env,
        scenario="quick-preview",
        time_scale="0.05",
        command=f"{NODE} {NODE_CLIENT}",
        junit=str(tmp_path / "junit.xml"),
        report_html=str(tmp_path / "report.html"),
    )
    assert done.returncode == 0, done.stderr
    found = outputs(env["GITHUB_OUTPUT"])
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", found["url"])
    assert found["journal"] == str(tmp_path / "fakeprovider-journal.jsonl")
    assert [e.kind for e in read_journal(found["journal"])][:2] == ["admin", "submit"]
    assert ElementTree.parse(tmp_path / "junit.xml").getroot()[0].attrib["failures"] == "0"
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert "no invariant violations" in done.stdout


def test_the_action_fails_a_hasty_node_client_with_annotations(
    tmp_path: Path, env: dict[str, str]
) -> None:
    done = step(
        {**env, "GITHUB_ACTIONS": "true"},
        scenario="quick-preview",
        time_scale="0.05",
        command=f"{NODE} {NODE_CLIENT} --hasty",
        check_options="--max-violations 2",
    )
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    errors = [line for line in lines if line.startswith("::error title=")]
    assert errors[0].startswith(
        "::error title=fakeprovider quick-preview%3A honours_poll_after::status read #"
    )
    assert re.fullmatch(
        r"::error title=fakeprovider quick-preview::\d+ more violation\(s\) not shown", errors[2]
    )
    assert "invariant violation(s): honours_poll_after x" in done.stderr.splitlines()[-1]


def test_the_action_can_only_start_the_fake(tmp_path: Path, env: dict[str, str]) -> None:
    done = step(env, scenario="quick-preview", time_scale="0.05", start_only="true")
    assert done.returncode == 0, done.stderr
    found = outputs(env["GITHUB_OUTPUT"])
    pid = int(found["pid"])
    try:
        exported = outputs(env["GITHUB_ENV"])
        assert exported == {
            "FAKEPROVIDER_URL": found["url"],
            "FAKEPROVIDER_JOURNAL": found["journal"],
        }
        client = subprocess.run(
            [str(NODE), NODE_CLIENT], env={**env, **exported}, capture_output=True, timeout=60
        )
        assert client.returncode == 0
        check = subprocess.run(
            ["fakeprovider", "check", found["journal"], "--format", "github"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert check.returncode == 0, check.stdout
        assert check.stdout.splitlines()[-1] == (
            "::notice title=fakeprovider quick-preview::no invariant violations"
        )
    finally:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_the_action_reports_a_server_that_cannot_start(env: dict[str, str]) -> None:
    done = step(env, scenario="no-such-scenario", start_only="true")
    assert done.returncode == 2
    assert "no bundled scenario named 'no-such-scenario'" in done.stderr
    assert done.stderr.splitlines()[-1] == "::error title=fakeprovider::the server did not start"


def test_the_plain_shell_recipe_runs_a_node_client(env: dict[str, str]) -> None:
    recipe = ROOT / "ci" / "recipe.sh"
    done = subprocess.run(
        ["bash", str(recipe), "quick-preview", str(NODE), NODE_CLIENT, "--hasty"],
        env={**env, "TIME_SCALE": "0.05"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1  # the hasty client breaks honours_poll_after
    assert "honours_poll_after" in done.stdout
    assert recipe.read_text().split("set -euo pipefail\n", 1)[1] in (ROOT / "README.md").read_text()
