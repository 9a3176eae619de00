"""Serving a ``FakeProvider`` with uvicorn: in a background thread, or in the foreground.

``ServerThread`` binds the socket itself (port 0 picks a free port), hands it to uvicorn, waits
until uvicorn has started before returning from ``start()``, and stops with ``should_exit``.
Both also run a webhook ``Dispatcher`` (its own thread and event loop) for the provider.

Both serve on the fast stack when it is installed (it is a dependency where it has wheels):
``httptools`` parses HTTP/1.1 and ``uvloop`` runs the event loop; ``http="h11"`` and
``loop="asyncio"`` are the pure-Python fallbacks (``"auto"``, the default, picks the fast one
when it imports).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import importlib.util
import inspect
import ipaddress
import logging
import math
import secrets
import signal
import socket
import textwrap
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from types import FrameType, TracebackType
from typing import Any, Literal, get_args

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .app import FakeProviderApp, create_app
from .dispatcher import Dispatcher
from .provider import FakeProvider

__all__ = [
    "DEFAULT_HOST",
    "HTTP_CHOICES",
    "LOOP_CHOICES",
    "ServerThread",
    "admin_token_for",
    "bind_socket",
    "is_loopback",
    "resolve_stack",
    "serve_forever",
    "serving",
]

DEFAULT_HOST = "127.0.0.1"
#: Seconds a connection may stay open without a request in progress: a fresh one that sends
#: nothing (or trickles a request head), and a kept-alive one between requests.
IDLE_TIMEOUT = 5.0
#: Seconds the server waits, once asked to stop, for the answers in flight to go out.
GRACEFUL_TIMEOUT = 2.0

Http = Literal["auto", "httptools", "h11"]
Loop = Literal["auto", "uvloop", "asyncio"]
#: ``http=``: the HTTP/1.1 parser; ``auto`` is httptools when it imports, else h11.
HTTP_CHOICES: tuple[str, ...] = get_args(Http)
#: ``loop=``: the event loop; ``auto`` is uvloop when it imports, else asyncio's own.
LOOP_CHOICES: tuple[str, ...] = get_args(Loop)


class OncePerCause(logging.Filter):
    """Lets each kind of message through once per ``window`` seconds (real time), then says
    how many like it were held back: a flood of bad requests or refused connections must not
    flood the log with one line each."""

    def __init__(self, window: float = 60.0) -> None:
        super().__init__()
        self.window = window
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        with self._lock:
            since, held = self._seen.get(key, (-math.inf, 0))
            if now - since < self.window:
                self._seen[key] = (since, held + 1)
                return False
            if len(self._seen) > 1024:  # bound the memory: forget the oldest causes
                self._seen.clear()
            self._seen[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like this in the last {self.window:g} s)"
        return True


logger = logging.getLogger("fakeprovider.server")

#: On uvicorn's and asyncio's loggers while a server runs (one instance: added once).
_ONCE = OncePerCause()


def _quiet_floods() -> None:
    for name in ("uvicorn.error", "asyncio"):
        logging.getLogger(name).addFilter(_ONCE)


class _Turn:
    """The connections of one event loop with an answer to send when the loop's current turn
    ends: each one's in one write, one after the other, from one ``call_soon`` a turn.

    Sending every answer of a turn together, after the turn's work, rather than each as soon
    as it is made, keeps a server under load doing one thing at a time (parse and answer the
    requests that came in, then send), which the processor's caches reward: some 5% more
    submits a second at 16 connections (``benchmarks/bench_wrk.py``). It costs a client that
    waits for each answer before it asks again a turn of latency an answer, though (some
    10 us on loopback: a tenth of a status read's round trip at one connection). So a turn
    holds its answers only when the turn before it answered more than one: a sequential
    client's answers go out as they are made, a busy server's when the turn ends, and no
    answer waits beyond the turn it was made in.
    """

    __slots__ = ("_answers", "_due", "_holding", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # (weakly: ``_TURNS`` keeps a loop's turn only while something else keeps the loop)
        self._loop = weakref.ref(loop)
        self._due: list[_CoalescingTransport] = []
        #: Answers made in this turn so far (0: the turn's ``_end`` is not scheduled yet).
        self._answers = 0
        #: Whether this turn holds its answers (the turn before it answered more than one).
        self._holding = False

    def add(self, transport: _CoalescingTransport) -> None:
        """``transport`` has an answer to send: at once, or when the turn ends."""
        if not self._answers:
            loop = self._loop()
            assert loop is not None  # a transport of the loop keeps it
            loop.call_soon(self._end)
        self._answers += 1
        if self._holding:
            transport._due = True
            self._due.append(transport)
        else:
            transport._release()

    def _end(self) -> None:
        self._holding = self._answers > 1
        self._answers = 0
        due, self._due = self._due, []
        for transport in due:
            transport._due = False
            try:
                transport._release()
            except Exception:  # a transport the loop refuses (a bug): the others still go out
                logger.exception("an answer could not be sent")
                transport.abort()


#: Each event loop's ``_Turn`` (a server thread's loop, the CLI's: one each).
_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turn] = weakref.WeakKeyDictionary()


def _turn(loop: asyncio.AbstractEventLoop) -> _Turn:
    turn = _TURNS.get(loop)
    if turn is None:
        turn = _TURNS[loop] = _Turn(loop)
    return turn


class _CoalescingTransport:
    """A connection's transport that sends each answer in one write: once it is whole, or on
    a busy server when the event loop's turn ends.

    uvicorn writes the status line and headers as soon as the app starts its response, then
    the body in a second write: two syscalls and two TCP segments per answer (with
    ``TCP_NODELAY``), which cost a loopback server as much as a third of a status read.
    Here small writes are held and joined, and handed to the event loop's ``_Turn``, which
    sends them at once or, on a busy server, when the turn ends with every other connection's
    answers of that turn: an answer leaves in one segment, and nothing waits beyond the turn
    it was written in. The
    head of the response ``protocol``'s cycle has in progress is held for its body, or for
    the response's end (``_IdleTimeout.on_response_complete``: a ``HEAD`` answer's). Large
    writes are never copied: what is held goes out first, then them. Closing sends what is
    held first; aborting drops it, as an abort drops the rest.
    """

    __slots__ = ("_due", "_held", "_protocol", "_turn", "transport")

    #: Writes up to this size may be held for the next (a response head always is).
    HOLD = 8192
    #: Writes are joined into one held buffer up to this size, else sent as they are.
    JOIN = 65536

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        protocol: _IdleTimeout | None = None,
    ) -> None:
        self.transport = transport
        self._turn = _turn(loop)
        #: Whose ``cycle`` tells a response's head (None: every write held until the turn ends).
        self._protocol = protocol
        #: What is held: waiting for the turn's end if ``_due`` (the turn sets it), else for
        #: the next write (a response's head, for its body).
        self._held: bytes | None = None
        self._due = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            if len(held) + len(data) <= _JOIN:
                self._held = held + data
                if not self._due:
                    self._turn.add(self)
                return
            self._held = None
            self.transport.write(held)
        if len(data) > _HOLD or self.transport.is_closing():
            self.transport.write(data)
            return
        self._held = bytes(data)
        protocol = self._protocol
        cycle = None if protocol is None else protocol.cycle
        # the head of the response in progress waits for its body (uvicorn marks the response
        # started before writing its head; a pipelined request's cycle is not started while
        # another answers)
        if not self._due and (
            cycle is None
            or not cycle.response_started
            or cycle.response_complete
            or data[:5] != b"HTTP/"
        ):
            self._turn.add(self)

    def answered(self) -> None:
        """The response in progress is complete: what is held goes out when the turn ends."""
        if self._held is not None and not self._due:
            self._turn.add(self)

    def _release(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self.transport.is_closing():
                self.transport.write(held)

    # The rest of ``asyncio.Transport``, each method of its own: a ``__getattr__`` for them
    # would slow every attribute of this class, ``write`` and ``_held`` included (a type with
    # one is looked up the slow way: some 2,000 instructions an answer).

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self.write(b"".join(list_of_data))

    def write_eof(self) -> None:
        self._release()
        self.transport.write_eof()

    def can_write_eof(self) -> bool:
        return self.transport.can_write_eof()

    def close(self) -> None:
        self._release()
        self.transport.close()

    def abort(self) -> None:
        self._held = None
        self.transport.abort()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def resume_reading(self) -> None:
        self.transport.resume_reading()

    def is_reading(self) -> bool:
        return self.transport.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self.transport.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self.transport.get_write_buffer_limits()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.transport.get_protocol()


#: ``_CoalescingTransport.HOLD`` and ``JOIN``, as globals (read faster than class attributes).
_HOLD = _CoalescingTransport.HOLD
_JOIN = _CoalescingTransport.JOIN


class _IdleTimeout(asyncio.Protocol):
    """Idle connections timed out, on top of either of uvicorn's HTTP/1.1 protocols.

    uvicorn only times out a kept-alive connection between requests; a connection that never
    sends a whole request head would stay open for ever (thousands of them exhaust the file
    descriptors). Here every connection must have a request in progress within the idle
    timeout of opening or of its last answer, else it is closed.

    One timer per connection, not one per answer: an answer only notes the time (a timer
    cancelled and made again costs 5-9 us, a tenth of a status read); when the timer fires
    early because of a later answer or a request in progress, it is set again for the rest.
    """

    # set by uvicorn's protocol classes, which come after this one in the MRO
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    timeout_keep_alive: Any  # an int in uvicorn's annotations; a float works
    cycle: Any  # each protocol's own RequestResponseCycle, None before the first request

    _idle: asyncio.TimerHandle | None = None
    _active = 0.0  # loop time of the opening or of the last answer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvicorn's protocol and its cycles write through this: one write per small answer
        wrapped = _CoalescingTransport(transport, self.loop, self)  # type: ignore[arg-type]
        super().connection_made(wrapped)  # type: ignore[arg-type]
        self._active = self.loop.time()
        self._idle = self.loop.call_at(self._active + self.timeout_keep_alive, self._idle_check)

    def on_response_complete(self) -> None:
        self.transport.answered()  # type: ignore[attr-defined]  # a head held, if any
        super().on_response_complete()  # type: ignore[misc]  # uvicorn's protocol has it
        self._active = self.loop.time()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        super().connection_lost(exc)

    def _idle_check(self) -> None:
        self._idle = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        busy = self.cycle is not None and not self.cycle.response_complete
        if busy:  # answered in time or not, the idle time counts from its answer
            self._idle = self.loop.call_at(now + self.timeout_keep_alive, self._idle_check)
        elif now - self._active < self.timeout_keep_alive:  # answered since the timer was set
            self._idle = self.loop.call_at(self._active + self.timeout_keep_alive, self._idle_check)
        else:
            self.transport.close()


class _H11Protocol(_IdleTimeout, H11Protocol):
    """uvicorn's pure-Python HTTP/1.1 protocol (h11), with idle connections timed out."""


def _httptools_protocol() -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with idle connections timed out (imported here: httptools
    may be missing)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    if not _written_from(HttpToolsProtocol.on_response_complete, _ON_RESPONSE_COMPLETE):

        class _UvicornsHttpToolsProtocol(_IdleTimeout, HttpToolsProtocol):
            """uvicorn's HTTP/1.1 protocol on httptools, with idle connections timed out (and
            uvicorn's keep-alive timer, armed after every answer)."""

        return _UvicornsHttpToolsProtocol

    class _HttpToolsProtocol(_IdleTimeout, HttpToolsProtocol):
        """uvicorn's HTTP/1.1 protocol on httptools, with idle connections timed out, and
        without uvicorn's keep-alive timer: ``_IdleTimeout``'s one timer a connection closes
        an idle kept-alive connection at the same time, where uvicorn's armed a timer after
        every answer and cancelled it when the next request came (with the ``call_soon`` the
        transport no longer makes for a head, some 9,000 instructions of a status read's 228,000
        on the server: ``benchmarks/bench_server_instructions.py``)."""

        pipeline: Any
        server_state: Any
        flow: Any

        def on_response_complete(self) -> None:
            # uvicorn's own (as of 0.54), but for arming its keep-alive timer; and
            # ``_IdleTimeout``'s: the head held sent, the answer's time noted
            transport = self.transport
            if transport._held is not None:  # type: ignore[attr-defined]
                transport.answered()  # type: ignore[attr-defined]
            self._active = self.loop.time()
            self.server_state.total_requests += 1
            if transport.is_closing():
                return
            flow = self.flow
            if flow.read_paused:  # unpause data reads if needed
                flow.resume_reading()
            if self.pipeline:  # the next pipelined request
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)

    return _HttpToolsProtocol


#: SHA-256 (first 16 hex digits) of the source of uvicorn's
#: ``HttpToolsProtocol.on_response_complete`` that ``_HttpToolsProtocol``'s is written from:
#: uvicorn 0.48 to 0.54 have it. With any other (an older uvicorn's, or a later one that changed
#: it) uvicorn's own is used, keep-alive timer and all: what it does beyond what was read here
#: is not left out.
_ON_RESPONSE_COMPLETE = frozenset({"5684fd801d0683ac"})


def _written_from(function: Callable[..., Any], digests: frozenset[str]) -> bool:
    """Whether ``function``'s source (dedented) has one of ``digests`` (``_ON_RESPONSE_COMPLETE``);
    False when its source cannot be read."""
    try:
        text = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    return hashlib.sha256(textwrap.dedent(text).encode()).hexdigest()[:16] in digests


_HTTPTOOLS_PROTOCOL: list[type[asyncio.Protocol]] = []  # made once, on first use


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def resolve_stack(http: str = "auto", loop: str = "auto") -> tuple[str, str]:
    """The HTTP parser and event loop ``http`` and ``loop`` name, ``auto`` resolved: httptools
    and uvloop when they are installed, else h11 and asyncio. Raises ValueError for a name
    that is not a choice or for a package that is not installed."""
    if http not in HTTP_CHOICES:
        raise ValueError(f"http must be one of {', '.join(HTTP_CHOICES)}, got {http!r}")
    if loop not in LOOP_CHOICES:
        raise ValueError(f"loop must be one of {', '.join(LOOP_CHOICES)}, got {loop!r}")
    for name, chosen, fallback, option in (
        ("httptools", http, "h11", "http"),
        ("uvloop", loop, "asyncio", "loop"),
    ):
        if chosen == name and not _installed(name):
            raise ValueError(
                f"{option}={name!r} needs the {name} package, which is not installed here;"
                f" install it (pip install {name}) or use {option}={fallback!r}"
            )
    if http == "auto":
        http = "httptools" if _installed("httptools") else "h11"
    if loop == "auto":
        loop = "uvloop" if _installed("uvloop") else "asyncio"
    return http, loop


def _protocol_class(http: str) -> type[asyncio.Protocol]:
    if http == "h11":
        return _H11Protocol
    if not _HTTPTOOLS_PROTOCOL:
        _HTTPTOOLS_PROTOCOL.append(_httptools_protocol())
    return _HTTPTOOLS_PROTOCOL[0]


def _loop_factory(loop: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if loop == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


class _Server(uvicorn.Server):
    """uvicorn's server; when asked to stop it first has the app answer what is in flight."""

    def __init__(self, config: uvicorn.Config, app: FakeProviderApp) -> None:
        super().__init__(config)
        self.app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.app.begin_shutdown()
        await super().shutdown(sockets)


def bind_socket(host: str = DEFAULT_HOST, port: int = 0) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets of such a
    # listener, and without it every small response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.set_inheritable(True)
    except OSError:
        sock.close()  # a port already taken, say: no socket left behind
        raise
    return sock


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def admin_token_for(host: str, admin_token: str | None) -> str | None:
    """The admin token to require: the one given, else, on an address others can reach, a new
    random one (the admin API resets and reloads the fake: not for anyone on the network)."""
    if admin_token is not None or is_loopback(host):
        return admin_token
    return secrets.token_urlsafe(24)


def _server(
    provider: FakeProvider,
    log_level: str,
    idle_timeout: float = IDLE_TIMEOUT,
    *,
    admin_token: str | None = None,
    foreground: bool = False,
    http: str = "httptools",
    loop: str = "uvloop",
) -> _Server:
    """A uvicorn server for ``provider`` on ``http`` and ``loop`` (resolved: no ``auto``)."""
    app = create_app(provider, admin_token=admin_token)
    config = uvicorn.Config(
        app,
        http=_protocol_class(http),
        loop=loop,  # what serve() runs on: the runner gets _loop_factory(loop)
        log_level=log_level,
        access_log=False,
        # the client is the peer on the socket: no X-Forwarded-For taken from anyone (the
        # fake is not behind a proxy), and one middleware less on every request
        proxy_headers=False,
        date_header=False,  # the fake writes Date itself, from the scenario clock
        server_header=False,
        lifespan="off",
        timeout_keep_alive=idle_timeout,  # type: ignore[arg-type]  # a float works
        timeout_graceful_shutdown=GRACEFUL_TIMEOUT,  # type: ignore[arg-type]
    )
    _quiet_floods()
    return (_ForegroundServer if foreground else _Server)(config, app)


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class ServerThread:
    """A real server for ``provider`` on a background thread (use as a context manager)."""

    def __init__(
        self,
        provider: FakeProvider,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        log_level: str = "warning",
        allow_webhook_hosts: Iterable[str] = (),
        idle_timeout: float = IDLE_TIMEOUT,
        admin_token: str | None = None,
        http: str = "auto",
        loop: str = "auto",
    ) -> None:
        self.provider = provider
        #: The HTTP parser and event loop this server runs on (``auto`` resolved).
        self.http, self.loop = resolve_stack(http, loop)
        self.dispatcher = Dispatcher(
            provider,
            allow_webhook_hosts=allow_webhook_hosts,
            loop_factory=_loop_factory(self.loop),
        )
        self._socket = bind_socket(host, port)
        self.url = _url(self._socket)
        #: What the admin API wants as ``Authorization: Bearer``: the one given, or one made up
        #: when ``host`` is not a loopback address; None: no token needed.
        self.admin_token = admin_token_for(host, admin_token)
        self._server = _server(
            provider,
            log_level,
            idle_timeout,
            admin_token=self.admin_token,
            http=self.http,
            loop=self.loop,
        )
        self._thread = threading.Thread(
            target=self._run, name=f"fakeprovider {self.url}", daemon=True
        )
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            with asyncio.Runner(loop_factory=_loop_factory(self.loop)) as runner:
                runner.run(self._server.serve(sockets=[self._socket]))
        except BaseException as exc:  # pragma: no cover - surfaced by start()/stop()
            self.error = exc

    def start(self, timeout: float = 10.0) -> ServerThread:
        self.dispatcher.start()
        self._thread.start()
        deadline = threading.Event()
        waited = 0.0
        while not self._server.started and self._thread.is_alive() and waited < timeout:
            deadline.wait(0.005)
            waited += 0.005
        if not self._server.started:
            self.stop()
            raise RuntimeError(
                f"the fakeprovider server at {self.url} did not start: {self.error!r}"
            )
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving (the answers in flight go out first), then the webhooks; every entry
        journaled is then written (a ``BatchedSink`` is flushed, not closed)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.dispatcher.stop()
        self.provider.journal.flush()
        with contextlib.suppress(OSError):
            self._socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@contextlib.contextmanager
def serving(provider: FakeProvider, **kwargs: object) -> Iterator[ServerThread]:
    with ServerThread(provider, **kwargs) as server:  # type: ignore[arg-type]
        yield server


class _ForegroundServer(_Server):
    """uvicorn's server, but SIGINT/SIGTERM only ask it to stop: the process then exits 0."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():  # pragma: no cover
            yield
            return
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _stop(self, sig: int, frame: FrameType | None) -> None:
        self.should_exit = True


def serve_forever(
    provider: FakeProvider,
    *,
    host: str = DEFAULT_HOST,
    port: int = 8000,
    log_level: str = "warning",
    on_ready: object = None,
    allow_webhook_hosts: Iterable[str] = (),
    idle_timeout: float = IDLE_TIMEOUT,
    admin_token: str | None = None,
    http: str = "auto",
    loop: str = "auto",
) -> None:
    """Serve in the foreground until SIGINT or SIGTERM, then answer what is in flight (within
    ``GRACEFUL_TIMEOUT``; the answers are journaled), flush the journal's sink and return.

    ``admin_token``: what the admin API wants as ``Authorization: Bearer`` (give the one from
    ``admin_token_for(host, ...)`` to require one on a non-loopback address). ``http`` and
    ``loop``: see ``resolve_stack`` (ValueError for one that is not installed)."""
    http, loop = resolve_stack(http, loop)
    sock = bind_socket(host, port)
    server = _server(
        provider,
        log_level,
        idle_timeout,
        admin_token=admin_token,
        foreground=True,
        http=http,
        loop=loop,
    )
    dispatcher = Dispatcher(
        provider, allow_webhook_hosts=allow_webhook_hosts, loop_factory=_loop_factory(loop)
    ).start()
    if callable(on_ready):
        on_ready(_url(sock))
    try:
        with _serving_gc():
            server.run(sockets=[sock])
    finally:
        dispatcher.stop()
        provider.journal.flush()  # every answer journaled is in the file before returning
        sock.close()


#: ``gc.set_threshold`` while serving in the foreground: the youngest generation collected
#: every 10,000 allocations rather than 700 (each request allocates a few hundred objects).
SERVING_GC_THRESHOLD = (10_000, 20, 100)


@contextlib.contextmanager
def _serving_gc() -> Iterator[None]:
    """The garbage collector tuned for serving: what startup made is frozen (never scanned
    again) and the young generation collected less often. A server keeps every job and journal
    entry, so the heap grows with each submit and full collections grew with it: measured
    in-process over 30,000 submits, the slowest went from 65-79 ms to 3 ms and the CPU per
    submit fell by about 15%. Restored on the way out."""
    threshold = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
