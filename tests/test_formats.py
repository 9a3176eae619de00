"""``check --format text|json|junit|github`` and the capped text report."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from fakeprovider._formats import format_report
from fakeprovider.cli import main
from fakeprovider.invariants import Limits, check

from .test_invariants import e


def buggy(jobs: int) -> list:
    """``jobs`` jobs each shown done at submit and read again (one stops_at_terminal each),
    and a cancel after the deadline of the first."""
    entries = []
    for n in range(1, jobs + 1):
        job = f"j_{n}"
        entries.append(e(2 * n - 1, "submit", float(n), status="succeeded", job=job))
        entries.append(e(2 * n, "status", n + 0.5, status="succeeded", job=job))
    entries.append(e(2 * jobs + 1, "cancel", 500.0, job="j_1"))
    return entries


def write(path: Path, entries: list) -> Path:
    path.write_text("".join(json.dumps(x.to_dict()) + "\n" for x in entries), encoding="utf-8")
    return path


def test_the_text_report_starts_with_a_count_per_rule_and_caps_the_detail() -> None:
    report = check(buggy(30), Limits(deadline=60.0))
    lines = report.render().splitlines()
    assert lines[:2] == [
        "31 invariant violation(s) in 61 request(s) from 1 client(s):",
        "  by rule: stops_at_terminal 30, deadline 1",
    ]
    shown = [line for line in lines if line.startswith("  stops_at_terminal:")]
    assert len(shown) == 20
    assert (
        "  ... and 11 more violation(s) not shown (the first 20 are; --max-violations 0 shows all)"
        in lines
    )
    everything = report.render(max_violations=0)
    assert "more violation(s) not shown" not in everything
    assert everything.count("\n  stops_at_terminal:") == 30


def test_the_one_line_summary_names_the_broken_rules() -> None:
    assert check(buggy(3), Limits(deadline=60.0)).summary() == (
        "4 invariant violation(s): stops_at_terminal x3, deadline x1"
    )
    assert check([e(1, "submit", 0.0, status="queued")]).summary() == ("no invariant violations")


def test_junit_has_one_case_per_invariant_failed_or_skipped() -> None:
    report = check(buggy(2), Limits(deadline=60.0))
    root = ElementTree.fromstring(format_report(report, "junit", name="fakeprovider demo"))
    (suite,) = root
    assert suite.attrib == {
        "name": "fakeprovider demo",
        "tests": "12",
        "failures": "2",
        "errors": "0",
        "skipped": "2",
    }
    cases = {case.attrib["name"]: case for case in suite.iter("testcase")}
    assert len(cases) == 12
    failure = cases["stops_at_terminal"].find("failure")
    assert failure is not None
    assert failure.attrib["message"].startswith("2 violation(s): ")
    assert failure.text is not None
    assert len(failure.text.splitlines()) == 2
    skipped = cases["status_rate"].find("skipped")
    assert skipped is not None
    assert skipped.attrib["message"] == "opt-in: no status_rate budget was set"
    assert list(cases["no_overlap"]) == []  # passed


def test_github_output_is_one_annotation_per_violation_and_a_summary() -> None:
    report = check(
        [
            e(1, "submit", 0.0, status="succeeded"),
            e(2, "status", 1.0, status="succeeded"),
        ]
    )
    lines = format_report(report, "github", name="fakeprovider x").splitlines()
    assert lines[0] == (
        "::error title=fakeprovider x%3A stops_at_terminal::"
        + report.violations[0].message.replace("%", "%25")
    )
    assert lines[-1] == (
        "::error title=fakeprovider x::1 invariant violation(s): stops_at_terminal x1"
    )
    assert all(line.startswith(("::error ", "::warning ")) for line in lines)
    capped = format_report(check(buggy(5)), "github", max_violations=2).splitlines()
    assert capped[2] == "::error title=fakeprovider::3 more violation(s) not shown"


def test_check_format_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "j.jsonl", buggy(30))
    assert main(["check", str(path), "--format", "junit"]) == 1
    assert ElementTree.fromstring(capsys.readouterr().out).tag == "testsuites"
    assert main(["check", str(path), "--json"]) == 1
    assert len(json.loads(capsys.readouterr().out)["violations"]) == 30
    assert main(["check", str(path), "--format", "github", "--max-violations", "3"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[3] == "::error title=fakeprovider::27 more violation(s) not shown"
    assert main(["check", str(path), "--max-violations", "1"]) == 1
    out = capsys.readouterr().out
    assert out.count("\n  stops_at_terminal:") == 1
    assert "... and 29 more violation(s) not shown" in out


def test_check_refuses_a_bad_max_violations(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", "j.jsonl", "--max-violations", "-1"])
    assert exited.value.code == 2
    assert "argument --max-violations: expected 0 or more, got -1" in capsys.readouterr().err


def test_an_unknown_format_is_refused_with_the_closest() -> None:
    report = check(buggy(1), Limits(deadline=60.0))
    with pytest.raises(
        ValueError,
        match=r"^unknown report format 'jsn' \(did you mean 'json'\?\); known: text, json, junit,"
        r" github$",
    ):
        format_report(report, "jsn")
