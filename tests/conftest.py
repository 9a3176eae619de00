"""Suite-wide fixtures.

The default run uses pytest-xdist (``-n 2`` in pyproject's addopts). A test that runs pytest
in-process through ``pytester`` starts a plain session, not an xdist worker, but it inherits the
worker's environment: pytest-benchmark (before 5.3) reads ``PYTEST_XDIST_WORKER`` there,
believes xdist is active and warns at start-up, which the children's ``filterwarnings = error``
turns into an internal error. Those children run without the worker's variables, as they do in
a run without ``-n``.
"""

from __future__ import annotations

import pytest

_WORKER_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def _pytester_children_are_not_xdist_workers(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "pytester" not in request.fixturenames:
        return
    for name in _WORKER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
