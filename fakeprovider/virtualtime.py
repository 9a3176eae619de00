"""Virtual time for the code under test: time, datetime and asyncio follow a ``VirtualClock``.

``VirtualTime(clock)`` is a context manager. While it is active, on the thread that entered it:

- ``time.sleep(s)`` advances the clock by ``s`` at once; ``time.monotonic()``/``monotonic_ns()``
  read ``<monotonic at entry> + clock.now()``; ``time.time()``/``time_ns()`` read
  ``clock.epoch + clock.now()``;
- ``datetime.datetime.now()``/``utcnow()``/``today()`` agree with ``time.time()``;
- every asyncio event loop running on that thread reads its ``time()`` from the virtual
  monotonic clock, and when the loop has nothing to do but wait for a timer it jumps the clock
  to that timer at once (trio's autojump): ``asyncio.sleep``, ``wait_for``, ``asyncio.timeout``
  and ``call_later`` all take no wall time, and concurrent sleepers overlap in virtual time.

Names bound by value before entry (``from time import sleep``, ``from datetime import
datetime``) are replaced in third-party and user modules too, and put back on exit; the standard
library's own captured copies (``threading``, ``queue``, ``subprocess``...) are left alone
because they time real blocking calls. Other threads always see real time.
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import contextlib
import datetime as _datetime_module
import math
import sys
import threading
import time as _time_module
import weakref
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import Any, Final

from .clock import VirtualClock
from .errors import FakeProviderError

__all__ = ["VirtualTime"]

_REAL_SLEEP: Final = _time_module.sleep
_REAL_MONOTONIC: Final = _time_module.monotonic
_REAL_MONOTONIC_NS: Final = _time_module.monotonic_ns
_REAL_TIME: Final = _time_module.time
_REAL_TIME_NS: Final = _time_module.time_ns
_REAL_DATETIME: Final = _datetime_module.datetime
_REAL_LOOP_TIME: Final = asyncio.base_events.BaseEventLoop.time
_REAL_CALL_LATER: Final = asyncio.base_events.BaseEventLoop.call_later

#: Top-level packages whose module globals are never rewritten (besides the standard library).
_UNTOUCHED: Final = frozenset(
    {
        "fakeprovider",
        "fakeprovider_pytest",
        "_pytest",
        "pytest",
        "pluggy",
        "hypothesis",
        "_hypothesis_globals",
        "xdist",
        "execnet",
        "coverage",
        "pytest_benchmark",
        "uvicorn",
        "starlette",
        "anyio",
        "sniffio",
        "h11",
        "httpcore",
        "httpx",
        "httpcore2",
        "httpx2",
        "urllib3",
        "respx",
        "yaml",
    }
)

_active_lock = threading.Lock()
_active: VirtualTime | None = None


def _current() -> VirtualTime | None:
    """The active virtual time when the calling thread is the one that entered it."""
    active = _active
    if active is not None and threading.get_ident() == active.thread_id:
        return active
    return None


def _sleep(seconds: float) -> None:
    active = _current()
    if active is None:
        _REAL_SLEEP(seconds)
        return
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    active.clock.advance(seconds)
    if threading.active_count() > 1:
        _REAL_SLEEP(0)  # let other threads run, as a real sleep would (a syscall: only if any)


def _monotonic() -> float:
    active = _current()
    return _REAL_MONOTONIC() if active is None else active.monotonic()


def _monotonic_ns() -> int:
    active = _current()
    return _REAL_MONOTONIC_NS() if active is None else int(active.monotonic() * 1e9)


def _time() -> float:
    active = _current()
    return _REAL_TIME() if active is None else active.time()


def _time_ns() -> int:
    active = _current()
    return _REAL_TIME_NS() if active is None else int(active.time() * 1e9)


def _loop_time(loop: asyncio.base_events.BaseEventLoop) -> float:
    active = _current()
    if active is None:
        return _REAL_LOOP_TIME(loop)
    active.instrument(loop)
    return active.monotonic()


def _monotonic_base(real: float, now: float) -> float:
    """What the virtual monotonic clock adds to the clock's reading ``now``: the real monotonic
    reading ``real`` at entry less ``now``, rounded up to a whole second, so that the monotonic
    clock never reads less than it did just before entry. Whole, so that a timer set ``d``
    seconds ahead lands the clock ``d`` seconds ahead: asyncio keeps a timer as ``time() + d``
    and the autojump advances the clock by its difference with ``time()``, which for a base of
    130999.39583213006 took ``asyncio.sleep(93)`` to 92.99999999999999 s (a whole base adds
    whole and half seconds exactly)."""
    return float(math.ceil(real - now))


def _call_later(
    loop: asyncio.base_events.BaseEventLoop,
    delay: float,
    callback: Callable[..., object],
    *args: Any,
    context: Any = None,
) -> asyncio.TimerHandle:
    """``loop.call_later``, and the clock reading the timer is for (``clock.now() + delay``),
    kept for the autojump to land on (``_AutojumpSelector``)."""
    active = _current()
    start = None if active is None else active.clock.now()
    timer = _REAL_CALL_LATER(loop, delay, callback, *args, context=context)
    if active is not None and start is not None and type(delay) in (int, float) and delay > 0:
        selector = active._loops.get(loop)
        if selector is not None:
            selector.aim(timer.when(), start + delay)
    return timer


class _DatetimeMeta(type):
    """Keeps ``isinstance(x, datetime.datetime)`` true for real datetimes while patched."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _REAL_DATETIME)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _REAL_DATETIME)


class _VirtualDatetime(_datetime_module.datetime, metaclass=_DatetimeMeta):
    """``datetime.datetime`` whose ``now``/``utcnow``/``today`` follow the virtual clock.

    They return real ``datetime.datetime`` instances (hence the ignored overrides).
    """

    @classmethod
    def now(cls, tz: _datetime_module.tzinfo | None = None) -> _datetime_module.datetime:  # type: ignore[override]
        active = _current()
        if active is None:
            return _REAL_DATETIME.now(tz)
        return _REAL_DATETIME.fromtimestamp(active.time(), tz)

    @classmethod
    def utcnow(cls) -> _datetime_module.datetime:  # type: ignore[override]
        active = _current()
        if active is None:
            return _REAL_DATETIME.now(_datetime_module.UTC).replace(tzinfo=None)
        moment = _REAL_DATETIME.fromtimestamp(active.time(), _datetime_module.UTC)
        return moment.replace(tzinfo=None)

    @classmethod
    def today(cls) -> _datetime_module.datetime:  # type: ignore[override]
        return cls.now()

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Callable[[Any], Any]) -> Any:
        """pydantic: a field annotated with this class (a module's ``from datetime import
        datetime`` rebound while virtual time is active) validates as a real datetime."""
        return handler(_REAL_DATETIME)


class _RealDatetimeModule(ModuleType):
    """The ``datetime`` module as it is outside virtual time: ``.datetime`` is the real class.

    Libraries that compare types by identity (pydantic's ``obj is datetime.datetime`` while it
    builds a model's schema, lazily, maybe under virtual time) get this in place of the module.
    """

    def __getattr__(self, name: str) -> Any:
        if name == "datetime":
            return _REAL_DATETIME
        return getattr(_datetime_module, name)


_REAL_DATETIME_MODULE: Final = _RealDatetimeModule("datetime")

#: Top-level packages that must keep seeing the real ``datetime.datetime`` (they are left alone
#: otherwise, as the ``_UNTOUCHED`` ones are).
_TYPE_READERS: Final = frozenset({"pydantic"})


#: The most timers ``_AutojumpSelector`` keeps the clock readings of (those of timers cancelled
#: before they were due are never taken): forgotten all at once when full.
_AIMS_KEPT: Final = 4096


class _AutojumpSelector:
    """Wraps a loop's selector: a wait for a timer with no I/O ready jumps the clock instead.

    The jump lands on the clock reading the timer was set for, where ``call_later`` said which
    (``asyncio.sleep``, ``call_later``): ``clock.now() + delay``, exactly. Moving the clock by
    the wait instead, the loop's time less the timer's, lands a few picoseconds short of it as
    often as not (the loop's time is the monotonic reading at entry plus the clock's, and the
    sum rounds): after ``await asyncio.sleep(0.3)``, an ``await asyncio.sleep(93)`` found a job
    due 93 s later still rendering. Other timers (``call_at``, ``asyncio.timeout``) move it by
    the wait."""

    def __init__(
        self,
        inner: Any,
        clock: VirtualClock,
        thread_id: int,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.inner = inner
        self.clock = clock
        self.thread_id = thread_id
        self._loop = weakref.ref(loop)
        #: Clock readings timers were set for, by the loop time they are due at.
        self._aims: dict[float, float] = {}

    def aim(self, when: float, reading: float) -> None:
        """The timer due at loop time ``when`` is for clock reading ``reading``."""
        aims = self._aims
        if len(aims) >= _AIMS_KEPT:
            aims.clear()
        aims[when] = max(reading, aims.get(when, reading))

    def select(self, timeout: float | None = None) -> Any:
        if timeout is None or _current() is None:
            return self.inner.select(timeout)
        if timeout <= 0:
            events = self.inner.select(timeout)
            if not events:
                self._unstick()
            return events
        events = self.inner.select(0)
        if events:
            return events
        clock = self.clock
        aimed = self._aimed(timeout)
        if aimed is None:
            clock.advance(timeout)
        else:
            clock.jump_to(aimed)
        return []

    def _unstick(self) -> None:
        """Move the clock past a timer the loop finds due (a wait of 0) but will not run: it
        runs timers due before its time plus its clock's resolution (1 ns), and past some 97
        days of uptime the monotonic reading at entry plus the clock rounds by more than that,
        so the sum stays put and the loop, which no real time moves on, spun for ever."""
        loop = self._loop()
        scheduled = getattr(loop, "_scheduled", None)
        if loop is None or not scheduled or getattr(loop, "_ready", True):
            return
        when = scheduled[0].when()
        resolution = getattr(loop, "_clock_resolution", 0.0)
        for _ in range(4):  # (once is enough: a rounding step past the timer)
            now = loop.time()
            if when > now or when < now + resolution:
                return  # not due yet (another wait will come), or the loop runs it
            self.clock.advance(when + math.ulp(when) - now)

    def _aimed(self, timeout: float) -> float | None:
        """The clock reading the timer the loop waits for was set for, when known and within
        rounding of where ``timeout`` takes the clock (else None)."""
        scheduled = getattr(self._loop(), "_scheduled", None)
        if not scheduled or not self._aims:
            return None
        when = scheduled[0].when()
        aimed = self._aims.get(when)
        if aimed is None:
            return None
        now = self.clock.now()
        # (a wait asyncio cut short, at a day, leaves the timer's reading for a later wait)
        if now < aimed and abs(aimed - (now + timeout)) <= 1e-6 * max(1.0, timeout):
            del self._aims[when]
            return aimed
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


_MODULE_PATCHES: Final[tuple[tuple[ModuleType, str, Any], ...]] = (
    (_time_module, "sleep", _sleep),
    (_time_module, "monotonic", _monotonic),
    (_time_module, "monotonic_ns", _monotonic_ns),
    (_time_module, "time", _time),
    (_time_module, "time_ns", _time_ns),
    (_datetime_module, "datetime", _VirtualDatetime),
)


class VirtualTime:
    """Makes the entering thread's time, datetime and asyncio follow ``clock`` (not reentrant)."""

    def __init__(self, clock: VirtualClock, *, rebind_captured: bool = True) -> None:
        self.clock = clock
        self.rebind_captured = rebind_captured
        self.thread_id = threading.get_ident()
        self._monotonic_base = 0.0
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AutojumpSelector] = (
            weakref.WeakKeyDictionary()
        )
        self._rebound: list[tuple[dict[str, Any], str, Any]] = []

    # -- readings ------------------------------------------------------------------------

    def monotonic(self) -> float:
        return self._monotonic_base + self.clock.now()

    def time(self) -> float:
        return self.clock.epoch + self.clock.now()

    # -- asyncio -------------------------------------------------------------------------

    def instrument(self, loop: asyncio.AbstractEventLoop) -> None:
        """Give ``loop`` the autojump selector (once; loops without a selector are left alone)."""
        if loop in self._loops:
            return
        selector = getattr(loop, "_selector", None)
        if selector is None or isinstance(selector, _AutojumpSelector):
            return
        wrapper = _AutojumpSelector(selector, self.clock, self.thread_id, loop)
        loop._selector = wrapper  # type: ignore[attr-defined]
        self._loops[loop] = wrapper

    # -- entering and leaving ------------------------------------------------------------

    def __enter__(self) -> VirtualTime:
        global _active
        with _active_lock:
            if _active is not None:
                raise FakeProviderError(
                    "Virtual time is already active in this process; leave the other "
                    "virtual_provider() or VirtualTime block first."
                )
            self.thread_id = threading.get_ident()
            self._monotonic_base = _monotonic_base(_REAL_MONOTONIC(), self.clock.now())
            for module, name, replacement in _MODULE_PATCHES:
                setattr(module, name, replacement)
            asyncio.base_events.BaseEventLoop.time = _loop_time  # type: ignore[method-assign,assignment]
            asyncio.base_events.BaseEventLoop.call_later = _call_later  # type: ignore[method-assign,assignment]
            self._shield_type_readers()
            if self.rebind_captured:
                self._rebind()
            _active = self
        with contextlib.suppress(RuntimeError):  # no loop running on this thread
            self.instrument(asyncio.get_running_loop())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        global _active
        with _active_lock:
            _active = None
            for namespace, name, original in reversed(self._rebound):
                namespace[name] = original
            self._rebound.clear()
            asyncio.base_events.BaseEventLoop.time = _REAL_LOOP_TIME  # type: ignore[method-assign]
            asyncio.base_events.BaseEventLoop.call_later = _REAL_CALL_LATER  # type: ignore[method-assign]
            for module, name, _ in _MODULE_PATCHES:
                setattr(module, name, _ORIGINALS[(module.__name__, name)])
            for loop, wrapper in list(self._loops.items()):
                if getattr(loop, "_selector", None) is wrapper:
                    loop._selector = wrapper.inner  # type: ignore[attr-defined]
            self._loops.clear()

    def _shield_type_readers(self) -> None:
        """Give ``_TYPE_READERS`` modules the real ``datetime`` module's view (undone on exit)."""
        for name, module in list(sys.modules.items()):
            if module is None or name.partition(".")[0] not in _TYPE_READERS:
                continue
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for attr, value in list(namespace.items()):
                if value is _datetime_module:
                    namespace[attr] = _REAL_DATETIME_MODULE
                    self._rebound.append((namespace, attr, value))

    def _rebind(self) -> None:
        """Replace copies of the patched names bound by value in non-stdlib modules."""
        swaps = {
            id(_ORIGINALS[(m.__name__, n)]): (_ORIGINALS[(m.__name__, n)], r)
            for m, n, r in _MODULE_PATCHES
        }
        ids = frozenset(swaps)
        skip = _UNTOUCHED | _TYPE_READERS | sys.stdlib_module_names
        for name, module in list(sys.modules.items()):
            if module is None or name.partition(".")[0] in skip:
                continue
            try:
                namespace = vars(module)
            except TypeError:
                continue
            # (a pass in C that finds most modules holding none: one enter of a test's many
            # examples looks through a thousand modules or more)
            if ids.isdisjoint(map(id, namespace.values())):
                continue
            for attr, value in list(namespace.items()):
                swap = swaps.get(id(value))
                if swap is not None and value is swap[0]:
                    namespace[attr] = swap[1]
                    self._rebound.append((namespace, attr, value))

    def __repr__(self) -> str:
        return f"VirtualTime({self.clock!r})"


_ORIGINALS: Final[dict[tuple[str, str], Callable[..., Any] | type]] = {
    ("time", "sleep"): _REAL_SLEEP,
    ("time", "monotonic"): _REAL_MONOTONIC,
    ("time", "monotonic_ns"): _REAL_MONOTONIC_NS,
    ("time", "time"): _REAL_TIME,
    ("time", "time_ns"): _REAL_TIME_NS,
    ("datetime", "datetime"): _REAL_DATETIME,
}
