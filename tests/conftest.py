"""What every test run checks: it leaves no file behind in the repository.

A test or documentation example that writes to a relative path writes into the working
directory, which is the repository when pytest runs from it (``bad.jsonl`` and
``regressions/found.yaml`` once appeared at the root that way). The run notes the untracked
paths before the first test and fails, naming them, when new ones appear by the end: such a test
must write under ``tmp_path`` (or ``pytester.path``) instead.

The default run uses pytest-xdist (``-n 2`` in pyproject's addopts). A test that runs pytest
in-process through ``pytester`` starts a plain session, not an xdist worker, but it inherits the
worker's environment: pytest-benchmark (before 5.3) reads ``PYTEST_XDIST_WORKER`` there,
believes xdist is active and warns at start-up, which the children's ``filterwarnings = error``
turns into an internal error. Those children run without the worker's variables, as they do in
a run without ``-n``.

``pytester`` also takes back, after each in-process child run, every module first imported
during it; a module imported before keeps what it built from them. ``fakeprovider.server``
keeps the protocol class it derives from uvicorn's httptools protocol, so when a child was the
first to start a server, a later test's ``HttpToolsProtocol`` was another class than the
server's base (test_server failed after test_plugin, as xdist can order them). uvicorn's
protocol modules are imported here, before any child runs.
"""

from __future__ import annotations

import contextlib
import importlib
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

#: The default run shares its machine (two xdist workers, and on CI whatever else runs):
#: Hypothesis's 200 ms deadline per example measured the machine's load, not the code, and
#: failed tests that passed when run alone. Tests that want a bound on time are benchmarks.
settings.register_profile("fakeprovider-tests", deadline=None)
settings.load_profile("fakeprovider-tests")

ROOT = Path(__file__).resolve().parent.parent
#: What the tools themselves keep in the tree (and .gitignore names).
CACHES = frozenset(
    {".benchmarks", ".hypothesis", ".mypy_cache", ".pytest_cache", ".ruff_cache", "__pycache__"}
)
_BEFORE = pytest.StashKey[frozenset[str]]()
for _module in ("uvicorn.protocols.http.httptools_impl", "uvicorn.protocols.http.h11_impl"):
    with contextlib.suppress(ImportError):  # httptools is optional
        importlib.import_module(_module)

_WORKER_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def untracked_paths(root: Path) -> frozenset[str] | None:
    """The paths under ``root`` that git does not track, ignored ones included, a folder git
    knows nothing of as one path (``regressions/``), caches left out; None outside a git
    work tree (an unpacked sdist)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "ls-files", "--others", "--directory", "-z"],
            capture_output=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    paths = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return frozenset(p for p in paths if p and not CACHES.intersection(p.rstrip("/").split("/")))


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller checks
        return
    before = untracked_paths(ROOT)
    if before is not None:
        session.config.stash[_BEFORE] = before


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_BEFORE, None)
    after = untracked_paths(ROOT) if before is not None else None
    if before is None or after is None:
        return
    new = sorted(after - before)
    if not new:
        return
    message = (
        f"the test run left {len(new)} new file(s) in the repository: {', '.join(new)};"
        " a test must write under tmp_path, not the working directory"
    )
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True, bold=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _pytester_children_are_not_xdist_workers(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "pytester" not in request.fixturenames:
        return
    for name in _WORKER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
