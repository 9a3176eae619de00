"""A client project without an optional dependency gets one sentence naming the extra."""

from __future__ import annotations

import importlib
import sys

import httpx
import pytest

EXTRA = "install the pytest extra: pip install 'fakeprovider[pytest]'"


def _import_without(monkeypatch: pytest.MonkeyPatch, module: str, missing: str) -> None:
    """Import ``module`` afresh as if ``missing`` were not installed (sys.modules None entry)."""
    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, missing, None)
    importlib.import_module(module)


def test_inprocess_mode_needs_no_respx(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process mode patches httpx's transports itself: respx may be missing."""
    monkeypatch.delitem(sys.modules, "fakeprovider.inprocess", raising=False)
    monkeypatch.setitem(sys.modules, "respx", None)
    inprocess = importlib.import_module("fakeprovider.inprocess")
    with inprocess.virtual_provider("slow-success") as fp, httpx.Client(base_url=fp.url) as client:
        assert client.post("/v1/jobs", json={"prompt": "a"}).status_code == 202


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


def test_inprocess_fixture_runs_without_respx(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import sys

        sys.modules.pop("fakeprovider.inprocess", None)
        sys.modules["respx"] = None
        """
    )
    pytester.makepyfile(
        """
        import httpx

        def test_client(fakeprovider_inprocess):
            with httpx.Client(base_url=fakeprovider_inprocess.url) as client:
                assert client.post("/v1/jobs", json={"prompt": "a"}).status_code == 202
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
