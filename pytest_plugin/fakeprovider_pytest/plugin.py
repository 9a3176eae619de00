"""The pytest11 entry point ``fakeprovider``: marker, options, fixtures and failure reports.

Only pytest is imported at module level; fakeprovider (with uvicorn and Starlette) is imported
when a fixture is first used, so the plugin costs nothing in test runs that do not use it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._handle import ProviderHandle, plan_scenario
from ._session import DEFAULT_SCENARIO, FakeproviderSession, forget_last_handles

if TYPE_CHECKING:
    from _pytest.reports import TestReport

    from fakeprovider.scenario import Scenario

__all__ = ["fakeprovider", "fakeprovider_inprocess", "fakeprovider_session"]

MARKER_HELP = (
    "fakeprovider(scenario='slow-success', *, time_scale=1.0, seed=None, dialect=None, "
    "**expect): the scenario the fakeprovider fixtures play, with overrides of its expect: keys."
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fakeprovider", "fakeprovider (fake slow asynchronous APIs)")
    group.addoption(
        "--fakeprovider-journal-dir",
        metavar="DIR",
        default=None,
        help="write the journal of every failing test that used a fakeprovider fixture to DIR/<test id>.jsonl",
    )
    group.addoption(
        "--fakeprovider-report",
        metavar="DIR",
        default=None,
        help="write the HTML timeline report of every failing test that used a fakeprovider"
        " fixture to DIR/<test id>.html",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # a test that fails before making its own fake must not be shown the last test's journal;
    # its scenario paths are looked for next to its file, then in the rootdir
    forget_last_handles(_search_dirs(item))


def _search_dirs(item: pytest.Item) -> list[tuple[Path, str]]:
    return [(item.path.parent, "next to the test file"), (item.config.rootpath, "in the rootdir")]


def _marker_scenario(request: pytest.FixtureRequest) -> tuple[Scenario, dict[str, Any]]:
    """The marker's scenario with its ``expect:`` overrides, and how to play it (``time_scale``,
    ``seed``, ``dialect``); a mistake in the marker fails the test with the message alone (no
    traceback through the plugin)."""
    from fakeprovider.errors import ScenarioError

    marker = request.node.get_closest_marker("fakeprovider")
    if marker is None:
        return plan_scenario(DEFAULT_SCENARIO, search_dirs=_search_dirs(request.node))
    if len(marker.args) > 1:
        pytest.fail(
            "The fakeprovider marker takes one scenario (a name, path or YAML text),"
            f" got {len(marker.args)} positional arguments.",
            pytrace=False,
        )
    scenario = marker.args[0] if marker.args else marker.kwargs.get("scenario", DEFAULT_SCENARIO)
    overrides = {k: v for k, v in marker.kwargs.items() if k != "scenario"}
    try:
        return plan_scenario(scenario, search_dirs=_search_dirs(request.node), **overrides)
    except (TypeError, ValueError, ScenarioError) as exc:
        problem = str(exc)
    pytest.fail(f"The fakeprovider marker of {request.node.nodeid}: {problem}", pytrace=False)


@pytest.fixture(scope="session")
def fakeprovider_session() -> Iterator[FakeproviderSession]:
    """The session's fake: a real server started on first use; ``.example()`` per Hypothesis example."""
    session = FakeproviderSession()
    yield session
    session.close()


@pytest.fixture
def fakeprovider(
    request: pytest.FixtureRequest, fakeprovider_session: FakeproviderSession
) -> Iterator[ProviderHandle]:
    """The session's real server, reset and playing the marker's scenario for this test."""
    scenario, play = _marker_scenario(request)
    handle = fakeprovider_session.server_handle(scenario, **play)
    yield handle
    fakeprovider_session.raise_errors()


@pytest.fixture
def fakeprovider_inprocess(
    request: pytest.FixtureRequest, fakeprovider_session: FakeproviderSession
) -> Iterator[ProviderHandle]:
    """The marker's scenario in-process for httpx, httpx2 and requests clients, with the test's
    time made virtual."""
    scenario, play = _marker_scenario(request)
    with fakeprovider_session.example(scenario, inprocess=True, **play) as handle:
        yield handle


def _handles(item: pytest.Item) -> list[ProviderHandle]:
    funcargs: dict[str, Any] = getattr(item, "funcargs", {})
    found: list[ProviderHandle] = []
    for name in ("fakeprovider", "fakeprovider_inprocess"):
        value = funcargs.get(name)
        if isinstance(value, ProviderHandle):
            found.append(value)
    session = funcargs.get("fakeprovider_session")
    if not found and isinstance(session, FakeproviderSession) and session.last_handle is not None:
        found.append(session.last_handle)
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: TestReport = outcome.get_result()
    if not report.failed or report.when == "teardown":
        return
    _name_the_broken_rules(report, call)
    handles = _handles(item)
    if not handles:
        return
    for handle in handles:
        report.sections.append(
            (
                f"fakeprovider journal ({handle.mode}, scenario {handle.scenario.name!r})",
                handle.timeline(),
            )
        )
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid).strip("_")
    folder = item.config.getoption("fakeprovider_journal_dir")
    if folder:
        directory = Path(folder)
        directory.mkdir(parents=True, exist_ok=True)
        for index, handle in enumerate(handles):
            suffix = "" if index == 0 else f".{handle.mode}"
            (directory / f"{stem}{suffix}.jsonl").write_text(
                handle.journal.to_jsonl(), encoding="utf-8"
            )
    folder = item.config.getoption("fakeprovider_report")
    if folder:
        directory = Path(folder)
        directory.mkdir(parents=True, exist_ok=True)
        for index, handle in enumerate(handles):
            suffix = "" if index == 0 else f".{handle.mode}"
            handle.write_report(directory / f"{stem}{suffix}.html", title=item.nodeid)


def _name_the_broken_rules(report: TestReport, call: pytest.CallInfo[None]) -> None:
    """Make the failure's one-line summary (``-r f``) the broken rules and their counts, first
    (rather than a truncated ``fakeprovider.errors.InvariantViolation: ...``)."""
    errors = sys.modules.get("fakeprovider.errors")  # not loaded: no fakeprovider failure
    excinfo = call.excinfo
    if (
        errors is None
        or excinfo is None
        or not isinstance(excinfo.value, errors.InvariantViolation)
    ):
        return
    found = excinfo.value.report
    crash = getattr(report.longrepr, "reprcrash", None)
    if found is not None and crash is not None:
        rules = ", ".join(f"{name} x{n}" for name, n in found.rule_counts().items())
        crash.message = f"{rules} ({len(found.violations)} invariant violations)"
