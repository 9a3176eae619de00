"""Wire dialects: how the engine's jobs look to a client of a given provider."""

from __future__ import annotations

from collections.abc import Callable

from .base import Dialect, HttpRequest, HttpResponse, Route
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

#: Dialect name -> factory. Provider dialects register here.
DIALECTS: dict[str, Callable[[], Dialect]] = {
    "generic": GenericDialect,
    "openai-videos": OpenAIVideosDialect,
    "runway": RunwayDialect,
    "replicate": ReplicateDialect,
    "fal": FalDialect,
    "google-veo": GoogleVeoDialect,
    "gemini": GeminiDialect,
    "luma": LumaDialect,
}


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name``; ``ValueError`` listing the known ones otherwise."""
    try:
        return DIALECTS[name]()
    except KeyError:
        known = ", ".join(sorted(DIALECTS))
        raise ValueError(f"unknown dialect {name!r}; known dialects: {known}") from None


def describe_dialects() -> str:
    """Every dialect name, in registration order, each with its note (``openai-videos (sunset
    API: ...)``): what ``serve --help`` lists."""
    notes = ((name, get_dialect(name).note) for name in DIALECTS)
    return ", ".join(f"{name} ({note})" if note else name for name, note in notes)
