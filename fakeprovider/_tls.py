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
from types import CodeType, ModuleType
from typing import Any

__all__ = ["enter", "install", "leave", "uninstall"]

#: The environment variables naming the CA certificates the libraries load by default (a
#: context is made again when what they name changes).
_CERTIFICATES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
_DEFAULT_ARGUMENTS = frozenset(("verify", "cert", "trust_env"))

#: Where the transports of httpx and httpx2 look up ``create_ssl_context``.
_TRANSPORT_MODULES = ("httpx._transports.default", "httpx2._transports.default")
#: The modules ``enter`` installed into, for ``leave``.
_entered: list[ModuleType] = []

#: The function's name in the transports' module.
_NAME = "create_ssl_context"
#: The attribute of ``shared``'s wrapper that holds the function it wraps.
_MARK = "_fakeprovider_wraps"

#: Whether a fake is entered (``install`` to ``uninstall``). A wrapper left in place after
#: ``uninstall`` (a test's monkeypatch of the function, undone after the fake left, puts it
#: back) passes every call on while this is False.
_active = False

#: The last context made for a default call, by the function that made it, the caller's
#: protocols and ``trust_env``: with what it was made from (``_made_from``). A context made
#: again, from a CA bundle rewritten, replaces the one before: one a kind, not one a test.
_contexts: dict[tuple[object, ...], tuple[tuple[object, ...], ssl.SSLContext]] = {}


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


def _made_from(trust_env: bool) -> tuple[object, ...]:
    """What a default context is made from, beyond the arguments: the CA certificates the
    environment names (stamped), the key log file (by name: it grows with each handshake) and
    the ``SSLContext`` class (``truststore.inject_into_ssl`` replaces it)."""
    if not trust_env:
        return (ssl.SSLContext,)
    return (*map(_stamp, _CERTIFICATES), os.environ.get("SSLKEYLOGFILE"), ssl.SSLContext)


def shared(
    create: Callable[..., ssl.SSLContext], transports: frozenset[CodeType]
) -> Callable[..., ssl.SSLContext]:
    """``create`` (a library's ``create_ssl_context``), returning for a default call from one
    of ``transports`` (the code of its transports' ``__init__``) the context it made for the
    last such call with the same protocols (see the module's docstring)."""

    def create_ssl_context(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        if (
            not _active
            or args
            or not kwargs.keys() <= _DEFAULT_ARGUMENTS
            or kwargs.get("verify", True) is not True
            or kwargs.get("cert") is not None
        ):
            return create(*args, **kwargs)
        # httpcore and httpcore2 set a context's ALPN protocols at each connection from their
        # pool's http1/http2: a context is shared only by transports that set the same ones
        # (the caller is a transport's __init__, whose arguments name them)
        caller = sys._getframe(1)
        if caller.f_code not in transports:
            return create(*args, **kwargs)
        arguments = caller.f_locals
        trust_env = bool(kwargs.get("trust_env", True))
        key = (create, arguments.get("http1"), arguments.get("http2"), trust_env)
        made_from = _made_from(trust_env)
        kept = _contexts.get(key)
        if kept is not None and kept[0] == made_from:
            return kept[1]
        context = create(*args, **kwargs)
        _contexts[key] = (made_from, context)
        return context

    setattr(create_ssl_context, _MARK, create)
    return create_ssl_context


def _transport_code(module: ModuleType) -> frozenset[CodeType]:
    """The code of ``module``'s transports' ``__init__``: the callers whose contexts are
    shared (httpx's and httpx2's ``HTTPTransport`` and ``AsyncHTTPTransport``)."""
    found = set()
    for name in ("HTTPTransport", "AsyncHTTPTransport"):
        code = getattr(getattr(getattr(module, name, None), "__init__", None), "__code__", None)
        if isinstance(code, CodeType) and "http2" in code.co_varnames:
            found.add(code)
    return frozenset(found)


def install(module: ModuleType) -> None:
    """Put ``shared``'s wrapper in place of ``module.create_ssl_context`` (a library's
    ``_transports.default``, where its transports look the function up), and let wrappers
    share contexts until ``uninstall``."""
    global _active
    _active = True
    current = getattr(module, _NAME, None)
    if current is None or hasattr(current, _MARK):
        return  # (not this library's layout, or wrapped already)
    transports = _transport_code(module)
    if transports:
        setattr(module, _NAME, shared(current, transports))


def uninstall(module: ModuleType) -> None:
    """Put back what ``install`` replaced in ``module``; a wrapper that cannot be taken out
    (another patch is above it) passes every call on from now."""
    global _active
    _active = False
    wrapped = getattr(getattr(module, _NAME, None), _MARK, None)
    if wrapped is not None:
        setattr(module, _NAME, wrapped)


def enter() -> None:
    """``install`` into the transports' modules of httpx and httpx2 that are imported (a
    library not imported yet makes no client), until ``leave``."""
    for name in _TRANSPORT_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            install(module)
            _entered.append(module)


def leave() -> None:
    """``uninstall`` from every module ``enter`` installed into."""
    while _entered:
        uninstall(_entered.pop())
