"""Wire dialects: how the engine's jobs look to a client of a given provider."""

from __future__ import annotations

from typing import cast

from .._suggest import did_you_mean
from ..http import HttpRequest, HttpResponse
from ..scenario import DIALECT_NAMES, DialectName
from ..settings import RunSettings
from .ark import ArkDialect
from .base import Dialect, Route
from .dashscope import DashScopeDialect
from .fal import FalDialect
from .gemini import GeminiDialect
from .generic import GenericDialect
from .google_veo import GoogleVeoDialect
from .luma import LumaDialect
from .openai_videos import OpenAIVideosDialect
from .replicate import ReplicateDialect
from .runway import RunwayDialect

__all__ = [
    "DIALECTS",
    "Dialect",
    "HttpRequest",
    "HttpResponse",
    "Route",
    "describe_dialects",
    "dialect_name",
    "get_dialect",
    "unknown_dialect",
]

_CLASSES: tuple[type[Dialect], ...] = (
    ArkDialect,
    DashScopeDialect,
    FalDialect,
    GeminiDialect,
    GenericDialect,
    GoogleVeoDialect,
    LumaDialect,
    OpenAIVideosDialect,
    ReplicateDialect,
    RunwayDialect,
)
_BY_NAME = {kind.name: kind for kind in _CLASSES}
if set(_BY_NAME) != set(DIALECT_NAMES):  # pragma: no cover - a dialect added to one place only
    raise ImportError(
        f"dialect classes {sorted(_BY_NAME)} do not match scenario.DialectName {DIALECT_NAMES}"
    )

#: Dialect name -> class, in the order of ``scenario.DialectName`` (the one list of names).
DIALECTS: dict[str, type[Dialect]] = {name: _BY_NAME[name] for name in DIALECT_NAMES}


def dialect_name(name: str) -> DialectName:
    """``name`` if a dialect is called so; otherwise ``ValueError`` with ``unknown_dialect``'s
    message. The one check of a dialect name given outside a scenario file (the ``serve`` and
    ``run`` options, the pytest marker, ``FakeProvider(dialect=...)``)."""
    if name not in DIALECTS:
        raise ValueError(unknown_dialect(name))
    return cast("DialectName", name)


def get_dialect(name: str, settings: RunSettings | None = None) -> Dialect:
    """The dialect called ``name``, made with ``settings`` (the defaults when None);
    ``ValueError`` listing the known ones otherwise."""
    return DIALECTS[dialect_name(name)](settings)


def unknown_dialect(name: str) -> str:
    """The message for a dialect name that is not one: the known ones, and the closest."""
    known = ", ".join(sorted(DIALECTS))
    return f"unknown dialect {name!r}{did_you_mean(name, DIALECTS)}; known dialects: {known}"


def describe_dialects() -> str:
    """Every dialect name, in registration order, each with its note (``openai-videos (sunset
    API: ...)``): what ``serve --help`` lists."""
    notes = ((name, get_dialect(name).note) for name in DIALECTS)
    return ", ".join(f"{name} ({note})" if note else name for name, note in notes)
