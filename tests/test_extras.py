"""A client project without an optional dependency gets one sentence naming the extra."""

from __future__ import annotations

import importlib
import sys

import pytest

EXTRA = "install the pytest extra: pip install 'fakeprovider[pytest]'"


def _import_without(monkeypatch: pytest.MonkeyPatch, module: str, missing: str) -> None:
    """Import ``module`` afresh as if ``missing`` were not installed (sys.modules None entry)."""
    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, missing, None)
    importlib.import_module(module)


def test_inprocess_mode_without_respx_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModuleNotFoundError) as caught:
        _import_without(monkeypatch, "fakeprovider.inprocess", "respx")
    assert str(caught.value) == (
        f"The in-process mode of fakeprovider needs respx, which is not installed; {EXTRA}"
    )
    assert caught.value.name == "respx"
    assert caught.value.__suppress_context__


def test_strategies_without_hypothesis_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModuleNotFoundError) as caught:
        _import_without(monkeypatch, "fakeprovider.strategies", "hypothesis")
    assert str(caught.value) == (
        f"fakeprovider.strategies needs hypothesis, which is not installed; {EXTRA}"
    )


def test_a_submodule_that_is_missing_is_named_by_its_package() -> None:
    from fakeprovider._extras import missing_extra

    error = missing_extra("Something", ModuleNotFoundError("no", name="hypothesis.strategies"))
    assert str(error) == f"Something needs hypothesis, which is not installed; {EXTRA}"


def test_inprocess_fixture_without_respx_fails_with_the_sentence_alone(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import sys

        sys.modules.pop("fakeprovider.inprocess", None)
        sys.modules["respx"] = None
        """
    )
    pytester.makepyfile(
        """
        def test_client(fakeprovider_inprocess):
            pass

        def test_real_server_still_works(fakeprovider):
            assert fakeprovider.url.startswith("http://127.0.0.1:")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_client*",
            f"The in-process mode of fakeprovider needs respx, which is not installed; {EXTRA}",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*During handling*")
    result.stdout.no_fnmatch_line("*ModuleNotFoundError*")
