"""The official SDKs are optional (the ``sdks`` extra): a test that drives one is skipped,
alone, when it is missing, and the SDK-free protocol tests of the same module still run."""

from __future__ import annotations

import importlib
from typing import Any

import pytest


def optional(module: str) -> Any:
    """``module`` imported, or None when it (or its package) is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def needs(module: str) -> pytest.MarkDecorator:
    """A mark that skips the test when ``module`` cannot be imported."""
    return pytest.mark.skipif(
        optional(module) is None,
        reason=f"{module} is not installed (pip install 'fakeprovider[sdks]')",
    )
