"""Which HTTP clients reach an in-process fake, and the error for those that cannot.

While at least one fake is entered (``enter``/``leave``):

- httpx clients are served through the patch of httpx's transports (``_via_httpx``), httpx2
  clients through the ``httpcore2`` patch (``_via_httpcore2``) and requests (any urllib3 2
  client) through the urllib3 patch (``_via_urllib3``), each only when that library is
  installed (httpx always is: the package depends on it);
- any other client (urllib, aiohttp, a raw socket) reaches name resolution for the fake's host,
  where ``socket.getaddrinfo`` raises ``NotInterceptedError``: in-process fakes have no
  address, and the error says which clients are served and which fixture to use instead;
- httpx and httpx2 clients made meanwhile share their default TLS context (``_tls``): making
  one no longer loads the CA certificates each time.
"""

from __future__ import annotations

import importlib
import socket
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

from . import _tls
from ._exchange import Exchange, Origin, Routes
from .errors import NotInterceptedError

__all__ = ["SUPPORTED", "enter", "leave", "not_intercepted"]

#: The clients in-process mode serves, as the error and the docs name them.
SUPPORTED: Final = "httpx, httpx2, requests and urllib3"

#: Interception modules, tried in order: the library they need, the module that patches it.
_INTERCEPTIONS: Final = (
    ("httpx", "fakeprovider._via_httpx"),
    ("httpcore2", "fakeprovider._via_httpcore2"),
    ("urllib3", "fakeprovider._via_urllib3"),
)

_REAL_GETADDRINFO: Final = socket.getaddrinfo


def _interceptions() -> list[ModuleType]:
    """The interception modules whose library is importable (urllib3 only from 2.0 on).

    Each is bound to the library module in ``sys.modules`` now: a library imported afresh since
    (pytester's child runs restore ``sys.modules``) gets its interception module reloaded, so the
    patch lands on the classes clients will use.
    """
    found = []
    for library, name in _INTERCEPTIONS:
        try:
            lib = importlib.import_module(library)
        except ImportError:
            continue
        if library == "urllib3" and not str(getattr(lib, "__version__", "2")).startswith("2"):
            continue
        module = importlib.import_module(name)
        if module.LIBRARY is not lib:
            module = importlib.reload(module)
        found.append(module)
    return found


_installed: list[ModuleType] = []


def not_intercepted(host: str) -> NotInterceptedError:
    return NotInterceptedError(
        f"A request for the in-process fake at {host!r} came from an HTTP client that"
        f" in-process mode does not intercept (it serves {SUPPORTED}); test this client"
        " against a real server instead: the fakeprovider fixture, or fakeprovider serve."
    )


def _guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
    number = int(port) if isinstance(port, int | str) and str(port).isdigit() else None
    if isinstance(name, str) and _routes.serves_host(name, number):
        raise not_intercepted(name)
    return _REAL_GETADDRINFO(host, port, *args, **kwargs)


def _install() -> None:
    for module in _interceptions():
        install: Callable[[Routes], None] = module.install
        install(_routes)
        _installed.append(module)
    _tls.enter()
    socket.getaddrinfo = _guarded_getaddrinfo


def _uninstall() -> None:
    socket.getaddrinfo = _REAL_GETADDRINFO
    _tls.leave()
    while _installed:
        _installed.pop().uninstall()


_routes: Final = Routes(_install, _uninstall)


def enter(origin: Origin, exchange: Exchange) -> None:
    """Serve ``origin`` from ``exchange`` to every intercepted client until ``leave``."""
    _routes.add(origin, exchange)


def leave(exchange: Exchange) -> None:
    _routes.remove(exchange)
