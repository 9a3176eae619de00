"""The one-sentence error for an optional dependency that is not installed."""

from __future__ import annotations

__all__ = ["EXTRA", "missing_extra"]

#: What a client project installs to get the fixtures, in-process mode and strategies.
EXTRA = "pip install 'fakeprovider[pytest]'"


def missing_extra(feature: str, error: ModuleNotFoundError) -> ModuleNotFoundError:
    """``error`` (a failed import) as one sentence naming ``feature``, the module and the extra.

    Raise it ``from None``: the import machinery's traceback says nothing more.
    """
    module = (error.name or "a module").partition(".")[0]
    return ModuleNotFoundError(
        f"{feature} needs {module}, which is not installed; install the pytest extra: {EXTRA}",
        name=error.name,
    )
