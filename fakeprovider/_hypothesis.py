"""Hypothesis plugin: ``st.from_type(Scenario)`` draws from ``fakeprovider.strategies.scenarios()``.

Hypothesis calls ``_hypothesis_setup_hook`` through the ``hypothesis`` entry point when it is
imported. The hook registers a resolver function, so ``fakeprovider.strategies`` is imported only
when a test first asks for a ``Scenario``; ``import fakeprovider`` never imports Hypothesis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from .scenario import Scenario

__all__ = ["_hypothesis_setup_hook"]


def _scenario_strategy(thing: type[Scenario]) -> SearchStrategy[Scenario]:
    from .strategies import scenarios

    return scenarios()


def _hypothesis_setup_hook() -> None:
    from hypothesis import strategies as st

    from .scenario import Scenario

    st.register_type_strategy(Scenario, _scenario_strategy)
