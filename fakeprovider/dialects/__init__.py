"""Wire dialects: how the engine's jobs look to a client of a given provider."""

from __future__ import annotations

from collections.abc import Callable

from .ark import ArkDialect
from .base import Dialect, HttpRequest, HttpResponse, Route
from .dashscope import DashScopeDialect
from .fal import FalDialect
from .generic import GenericDialect
from .google_veo import GoogleVeoDialect
from .luma import LumaDialect
from .openai_videos import OpenAIVideosDialect
from .replicate import ReplicateDialect
from .runway import RunwayDialect

__all__ = ["DIALECTS", "Dialect", "HttpRequest", "HttpResponse", "Route", "get_dialect"]

#: Dialect name -> factory. Provider dialects register here.
DIALECTS: dict[str, Callable[[], Dialect]] = {
    "generic": GenericDialect,
    "openai-videos": OpenAIVideosDialect,
    "runway": RunwayDialect,
    "replicate": ReplicateDialect,
    "fal": FalDialect,
    "google-veo": GoogleVeoDialect,
    "luma": LumaDialect,
    "ark": ArkDialect,
    "dashscope": DashScopeDialect,
}


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name``; ``ValueError`` listing the known ones otherwise."""
    try:
        return DIALECTS[name]()
    except KeyError:
        raise ValueError(unknown_dialect(name)) from None


def unknown_dialect(name: str) -> str:
    """The message for a dialect name that is not one: the known ones, and the closest."""
    from .._suggest import did_you_mean

    known = ", ".join(sorted(DIALECTS))
    return f"unknown dialect {name!r}{did_you_mean(name, DIALECTS)}; known dialects: {known}"
