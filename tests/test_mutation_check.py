"""``benchmarks/mutation_check.py`` stays runnable: every mutation still applies to the rules.

The check itself (a test run per mutation) takes minutes and is run by hand; this only checks
that each mutation's text is still found exactly once, so a change to a rule that moves it is
noticed here, with the mutation to update named.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from .bench_scripts import load_script


def _script() -> ModuleType:
    return load_script("mutation_check")


def test_every_mutation_applies_to_the_current_rules_and_changes_them() -> None:
    script = _script()
    names = [m.name for m in script.MUTATIONS]
    assert len(names) == len(set(names))
    for mutation in script.MUTATIONS:
        source = (script.ROOT / mutation.path).read_text()
        assert script.apply(source, mutation) != source, mutation.name


def test_a_mutation_whose_text_is_gone_is_refused_with_its_name() -> None:
    script = _script()
    stale = script.Mutation("gone", "fakeprovider/_rules.py", "no such code", "", "why")
    with pytest.raises(ValueError, match=r"^mutation gone: expected its text once in "):
        script.apply("def rule(): pass\n", stale)
