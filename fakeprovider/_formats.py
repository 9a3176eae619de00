"""An invariant report in the formats ``check --format`` writes: text, JSON, JUnit XML, GitHub.

JUnit XML has one test case per invariant (failed with its violations, skipped when it was not
checked), so CI dashboards show which rule broke. The GitHub format is workflow commands: one
``::error`` annotation per violation (up to the cap), one ``::warning`` per warning, and a
``::notice`` summary, which GitHub Actions shows on the run's page.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from xml.etree import ElementTree

if TYPE_CHECKING:
    from .invariants import Report

__all__ = ["FORMATS", "format_report"]

FORMATS: tuple[str, ...] = ("text", "json", "junit", "github")


def format_report(
    report: Report, fmt: str, *, max_violations: int | None = None, name: str = "fakeprovider"
) -> str:
    """``report`` as ``fmt`` (one of ``FORMATS``); ``name`` names the JUnit suite and the
    annotations (the scenario, say). ``max_violations`` caps the text and GitHub details."""
    if fmt == "text":
        return report.render(max_violations)
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2)
    if fmt == "junit":
        return junit(report, name)
    if fmt == "github":
        return github(report, name, max_violations)
    from ._suggest import did_you_mean

    hint = did_you_mean(fmt, FORMATS)
    raise ValueError(f"unknown report format {fmt!r}{hint}; known: {', '.join(FORMATS)}")


def junit(report: Report, name: str) -> str:
    """JUnit XML: a suite named ``name`` with one case per invariant."""
    from .invariants import INVARIANTS

    not_checked: dict[str, str] = report.coverage.get("not_checked", {})
    failures = sum(1 for rule in INVARIANTS if report.by_invariant(rule))
    suite = ElementTree.Element(
        "testsuite",
        {
            "name": name,
            "tests": str(len(INVARIANTS)),
            "failures": str(failures),
            "errors": "0",
            "skipped": str(sum(1 for rule in INVARIANTS if rule in not_checked)),
        },
    )
    for rule in INVARIANTS:
        case = ElementTree.SubElement(suite, "testcase", {"classname": name, "name": rule})
        found = report.by_invariant(rule)
        if found:
            failure = ElementTree.SubElement(
                case,
                "failure",
                {"message": f"{len(found)} violation(s): {found[0].message}", "type": rule},
            )
            failure.text = "\n".join(
                f"run {v.run}, client {v.client!r}, #{', #'.join(map(str, v.seqs))}: {v.message}"
                for v in found
            )
        elif rule in not_checked:
            ElementTree.SubElement(case, "skipped", {"message": not_checked[rule]})
    if report.warnings:
        out = ElementTree.SubElement(suite, "system-out")
        out.text = "\n".join(f"warning: {w}" for w in report.warnings)
    ElementTree.indent(suite)
    body = ElementTree.tostring(suite, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n{body}\n</testsuites>'


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def github(report: Report, name: str, max_violations: int | None) -> str:
    """GitHub Actions workflow commands: an ``::error`` per violation, a ``::warning`` per
    warning, then a ``::notice`` (clean) or ``::error`` (violations) summary."""
    lines = []
    shown = report.violations if not max_violations else report.violations[:max_violations]
    for v in shown:
        title = _escape_property(f"{name}: {v.invariant}")
        lines.append(f"::error title={title}::{_escape(v.message)}")
    if len(shown) < len(report.violations):
        more = len(report.violations) - len(shown)
        lines.append(f"::error title={_escape_property(name)}::{more} more violation(s) not shown")
    for warning in report.warnings:
        lines.append(f"::warning title={_escape_property(name)}::{_escape(warning)}")
    kind = "notice" if report.ok else "error"
    lines.append(f"::{kind} title={_escape_property(name)}::{_escape(report.summary())}")
    return "\n".join(lines)
