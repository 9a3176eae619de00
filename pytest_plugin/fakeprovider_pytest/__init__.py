"""pytest plugin for fakeprovider: fixtures, the ``fakeprovider`` marker, the contract suite.

Registered through the ``pytest11`` entry point ``fakeprovider`` (module ``fakeprovider_pytest.plugin``).
Importing this package imports pytest only; fakeprovider itself loads when a fixture is used.
"""

from __future__ import annotations

from ._contract import DEFAULT_DEADLINE, Adapter, contract_suite
from ._handle import ProviderHandle, locate_scenario, prepare_scenario
from ._session import DEFAULT_SCENARIO, FakeproviderSession

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_SCENARIO",
    "Adapter",
    "FakeproviderSession",
    "ProviderHandle",
    "contract_suite",
    "locate_scenario",
    "prepare_scenario",
]
