"""Wire dialects: how the engine's jobs look to a client of a given provider."""

from __future__ import annotations

from ..settings import RunSettings
from .ark import ArkDialect
from .base import Dialect, HttpRequest, HttpResponse, Route
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
    "get_dialect",
]

#: Dialect name -> class. Provider dialects register here.
DIALECTS: dict[str, type[Dialect]] = {
    "generic": GenericDialect,
    "openai-videos": OpenAIVideosDialect,
    "runway": RunwayDialect,
    "replicate": ReplicateDialect,
    "fal": FalDialect,
    "google-veo": GoogleVeoDialect,
    "gemini": GeminiDialect,
    "luma": LumaDialect,
    "ark": ArkDialect,
    "dashscope": DashScopeDialect,
}


def get_dialect(name: str, settings: RunSettings | None = None) -> Dialect:
    """The dialect called ``name``, made with ``settings`` (the defaults when None);
    ``ValueError`` listing the known ones otherwise."""
    try:
        kind = DIALECTS[name]
    except KeyError:
        raise ValueError(unknown_dialect(name)) from None
    return kind(settings)


def unknown_dialect(name: str) -> str:
    """The message for a dialect name that is not one: the known ones, and the closest."""
    from .._suggest import did_you_mean

    known = ", ".join(sorted(DIALECTS))
    return f"unknown dialect {name!r}{did_you_mean(name, DIALECTS)}; known dialects: {known}"


def describe_dialects() -> str:
    """Every dialect name, in registration order, each with its note (``openai-videos (sunset
    API: ...)``): what ``serve --help`` lists."""
    notes = ((name, get_dialect(name).note) for name in DIALECTS)
    return ", ".join(f"{name} ({note})" if note else name for name, note in notes)
