"""The stable surface: ``__all__`` and what ``import fakeprovider`` pulls in."""

from __future__ import annotations

import subprocess
import sys

import pytest

import fakeprovider


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name in dir(fakeprovider)
        if not name.startswith("_") and not isinstance(getattr(fakeprovider, name), type(sys))
    }
    assert set(fakeprovider.__all__) - {"__version__"} == public


def test_each_name_is_its_modules_and_imported_on_first_use() -> None:
    code = (
        "import sys, fakeprovider; print('fakeprovider.engine' in sys.modules);"
        " from fakeprovider import Engine; from fakeprovider.engine import Engine as E;"
        " print(Engine is E, 'Engine' in vars(fakeprovider))"
    )
    out = _in_fresh_interpreter(code)
    assert out.split() == ["False", "True", "True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'fakeprovider' has no attribute 'nope'$"):
        fakeprovider.nope  # noqa: B018


def test_import_does_not_pull_in_hypothesis_or_pytest() -> None:
    code = "import sys, fakeprovider; print(sorted(m for m in ('hypothesis', 'pytest', 'httpx', 'respx') if m in sys.modules))"
    out = _in_fresh_interpreter(code)
    assert out.strip() == "[]"


def test_public_submodules_are_attributes_of_the_package_as_the_docs_spell_them() -> None:
    code = (
        "import sys, fakeprovider;"
        " print(fakeprovider.invariants.check is fakeprovider.check,"
        " callable(fakeprovider.journal.iter_journal),"
        " callable(fakeprovider.webhooks.signed_message),"
        " fakeprovider.engine is sys.modules['fakeprovider.engine'])"
    )
    out = _in_fresh_interpreter(code)
    assert out.split() == ["True", "True", "True", "True"]


def _in_fresh_interpreter(code: str) -> str:
    """What ``code`` prints, run by a new interpreter (nothing imported before it)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
