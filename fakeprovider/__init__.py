"""fakeprovider: a scriptable fake of slow, asynchronous HTTP APIs, and a contract-test harness.

The stable surface is re-exported here; ``fakeprovider.strategies`` (Hypothesis) and the pytest
plugin are imported on their own, so ``import fakeprovider`` pulls in neither. Each name's
module is imported when the name is first read (``__getattr__``): ``fakeprovider check`` does
not pay for the engine, the provider and every dialect, which it never uses.
"""

import importlib
import typing

from ._version import __version__

if typing.TYPE_CHECKING:
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

#: Each public name's module (``__version__`` is imported above).
_MODULES = {
    **dict.fromkeys(("Clock", "RealClock", "VirtualClock"), ".clock"),
    "Engine": ".engine",
    **dict.fromkeys(
        ("FakeProviderError", "InvariantViolation", "Problem", "ScenarioError"), ".errors"
    ),
    **dict.fromkeys(
        ("Limits", "Report", "Violation", "assert_invariants", "check", "expected_outcome"),
        ".invariants",
    ),
    **dict.fromkeys(("Entry", "Journal", "read_journal"), ".journal"),
    "FakeProvider": ".provider",
    **dict.fromkeys(
        ("Scenario", "bundled_scenarios", "load_scenario", "parse_scenario"), ".scenario"
    ),
}


def __getattr__(name: str) -> object:
    """A public name, from its module (imported on first use), kept here from then on; or a
    public submodule (``fakeprovider.invariants``), imported, as ``import fakeprovider`` made
    them attributes when it imported them all."""
    module = _MODULES.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
