"""httpx and httpx2 clients made while an in-process fake is entered share their default TLS context.

Making an ``httpx.Client()`` (or an SDK's client, which makes one) builds an ``ssl.SSLContext``
and loads a bundle of CA certificates into it: 50-70 ms on a slow machine, more than a whole
10-minute render costs in virtual time. A property test that makes a client in each example, as
most code under test does, paid that 200 times for 200 examples.

While a fake is entered, the transports' ``create_ssl_context`` is replaced by ``shared``'s
wrapper. A transport's call for the default context (``verify=True``, no ``cert``) returns one
made earlier by the same function for a transport with the same ``http1`` and ``http2``, the
same ``trust_env`` and the same ``SSL_CERT_FILE``, ``SSL_CERT_DIR`` (the files they name
unchanged) and ``SSLKEYLOGFILE``. Any other call (``verify=False``, a context or a path of its
own, a client certificate, a caller that is not a transport) is passed on untouched.

The shared context is the one the library makes (same CAs, ``CERT_REQUIRED``, host names
checked), so a request to a real host is verified as before. Neither httpx nor httpx2 changes a
context after making it; httpcore and httpcore2 set its ALPN protocols before each TLS
connection, from the pool's ``http1`` and ``http2``, which is why only transports that set the
same protocols share one (a client with ``http2=True`` never changes another's offer). The
contexts are kept for the process: each example enters a fake anew, and a cache emptied on
leaving would never be hit.
"""

from __future__ import annotations

import os
import ssl
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["install", "uninstall"]

#: The environment variables the libraries read when making their default context.
_ENVIRONMENT = ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE")
_DEFAULT_ARGUMENTS = frozenset(("verify", "cert", "trust_env"))

#: The function's name in the transports' module.
_NAME = "create_ssl_context"
#: The attribute of ``shared``'s wrapper that holds the function it wraps.
_MARK = "_fakeprovider_wraps"

#: Every context made for a default call, by the function that made it and what it read.
_contexts: dict[tuple[object, ...], ssl.SSLContext] = {}


def _stamp(variable: str) -> tuple[object, ...] | None:
    """What ``variable`` names, as a context made from it depends on it: the path, and for a
    file or directory that exists its inode, size and time of change (a CA bundle rewritten
    at the same path, as a test suite making a CA for each test may, makes another context)."""
    value = os.environ.get(variable)
    if not value:
        return None
    try:
        stat = os.stat(value)
    except (OSError, ValueError):
        return (value,)
    return (value, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def shared(create: Callable[..., ssl.SSLContext]) -> Callable[..., ssl.SSLContext]:
    """``create`` (a library's ``create_ssl_context``), returning for a default call the
    context it made for the first such call (see the module's docstring)."""

    def create_ssl_context(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        if (
            args
            or not kwargs.keys() <= _DEFAULT_ARGUMENTS
            or kwargs.get("verify", True) is not True
            or kwargs.get("cert") is not None
        ):
            return create(*args, **kwargs)
        # httpcore and httpcore2 set a context's ALPN protocols at each connection from their
        # pool's http1/http2: a context is shared only by transports that set the same ones
        # (the caller is a transport's __init__, whose arguments name them)
        caller = sys._getframe(1)
        if "http2" not in caller.f_code.co_varnames:
            return create(*args, **kwargs)
        arguments = caller.f_locals
        protocols = (arguments.get("http1"), arguments.get("http2"))
        trust_env = bool(kwargs.get("trust_env", True))
        read = tuple(map(_stamp, _ENVIRONMENT)) if trust_env else ()
        key = (create, protocols, trust_env, read, ssl.SSLContext)
        context = _contexts.get(key)
        if context is None:
            context = _contexts[key] = create(*args, **kwargs)
        return context

    setattr(create_ssl_context, _MARK, create)
    return create_ssl_context


def install(module: ModuleType) -> None:
    """Put ``shared``'s wrapper in place of ``module.create_ssl_context`` (a library's
    ``_transports.default``, where its transports look the function up)."""
    current = getattr(module, _NAME, None)
    if current is None or hasattr(current, _MARK):
        return  # (not this library's layout, or wrapped already)
    setattr(module, _NAME, shared(current))


def uninstall(module: ModuleType) -> None:
    """Put back what ``install`` replaced in ``module``."""
    wrapped = getattr(getattr(module, _NAME, None), _MARK, None)
    if wrapped is not None:
        setattr(module, _NAME, wrapped)
