"""fakeprovider: a scriptable fake of slow, asynchronous HTTP APIs, and a contract-test harness.

The stable surface is re-exported here; ``fakeprovider.strategies`` (Hypothesis) and the pytest
plugin are imported on their own, so ``import fakeprovider`` pulls in neither.
"""

from ._version import __version__
from .clock import Clock, RealClock, VirtualClock
from .engine import Engine
from .errors import FakeProviderError, InvariantViolation, Problem, ScenarioError
from .invariants import Limits, Report, Violation, assert_invariants, check, expected_outcome
from .journal import Entry, Journal, read_journal
from .provider import FakeProvider
from .scenario import Scenario, bundled_scenarios, load_scenario, parse_scenario

__all__ = [
    "Clock",
    "Engine",
    "Entry",
    "FakeProvider",
    "FakeProviderError",
    "InvariantViolation",
    "Journal",
    "Limits",
    "Problem",
    "RealClock",
    "Report",
    "Scenario",
    "ScenarioError",
    "Violation",
    "VirtualClock",
    "__version__",
    "assert_invariants",
    "bundled_scenarios",
    "check",
    "expected_outcome",
    "load_scenario",
    "parse_scenario",
    "read_journal",
]
