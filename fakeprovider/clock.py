"""Clocks: where the engine's idea of "now" comes from.

Every clock reads seconds since its own start (``now()``), never going backwards, and knows the
Unix time of its start (``epoch``) so that ``Date`` and HTTP-date ``Retry-After`` headers can be
written. ``RealClock`` follows the machine; ``VirtualClock`` (after trio's ``MockClock``) moves
only when told, which makes a ten-minute render take no time at all in a test.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["DEFAULT_EPOCH", "Clock", "RealClock", "VirtualClock"]

#: 2026-01-01T00:00:00Z: the wall time at which virtual clocks start by default.
DEFAULT_EPOCH = 1_767_225_600.0


@runtime_checkable
class Clock(Protocol):
    """What the engine and the adapters need from a clock."""

    @property
    def epoch(self) -> float:
        """Unix time at which ``now()`` was 0."""
        ...

    def now(self) -> float:
        """Seconds since the clock started; never smaller than an earlier reading."""
        ...


class RealClock:
    """The machine's monotonic clock, counted from construction.

    ``monotonic`` and ``wall`` are attributes so that a test can replace them.
    """

    _monotonic: Callable[[], float]

    def __init__(
        self,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._start = monotonic()
        self._epoch = wall()
        self._last = 0.0
        self._lock = threading.Lock()
        self._fast = False
        self.monotonic = monotonic

    @property
    def epoch(self) -> float:
        return self._epoch

    @property
    def monotonic(self) -> Callable[[], float]:
        return self._monotonic

    @monotonic.setter
    def monotonic(self, monotonic: Callable[[], float]) -> None:
        # On the machine's own ``time.monotonic``, which never goes back, ``now`` is the
        # reading less the start as it is, without the lock and ``max`` (a closure set on the
        # instance: a request reads the clock twice); on any other, and in a subclass with a
        # ``now`` of its own, the method below. (Not through ``__dict__``: an instance whose
        # dict is made loses the interpreter's fast attribute reads, 1.3k instructions a
        # ``now()`` of the method.)
        if self._fast:  # never below what it read so far
            self._last = max(self._last, self._monotonic() - self._start)
            object.__delattr__(self, "now")
        self._monotonic = monotonic
        self._fast = (
            monotonic is time.monotonic and self._last == 0.0 and type(self).now is RealClock.now
        )
        if self._fast:
            object.__setattr__(self, "now", _since(monotonic, self._start))

    def now(self) -> float:
        with self._lock:
            self._last = max(self._last, self._monotonic() - self._start)
            return self._last

    def __repr__(self) -> str:
        return f"RealClock(now={self.now():.3f})"


def _since(monotonic: Callable[[], float], start: float) -> Callable[[], float]:
    def now() -> float:
        return monotonic() - start

    return now


class VirtualClock:
    """A clock that moves only when told to.

    ``advance(seconds)`` moves it forward and refuses to move it back; ``jump_to(t)`` moves it to
    an absolute reading (not earlier than now). Thread-safe, so a server thread and a test can
    share one.
    """

    def __init__(self, *, start: float = 0.0, epoch: float = DEFAULT_EPOCH) -> None:
        if start < 0:
            raise ValueError(f"a virtual clock cannot start before 0, got start={start!r}")
        self._now = float(start)
        self._epoch = float(epoch)
        self._lock = threading.Lock()

    @property
    def epoch(self) -> float:
        return self._epoch

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds`` (not negative); return the new reading."""
        if seconds < 0:
            raise ValueError(
                f"a virtual clock never goes backwards; got advance(seconds={seconds!r})"
            )
        with self._lock:
            self._now += seconds
            return self._now

    def jump_to(self, reading: float) -> float:
        """Move to ``reading`` if it is later than now (an earlier one is an error)."""
        with self._lock:
            if reading < self._now:
                raise ValueError(
                    f"a virtual clock never goes backwards; it reads {self._now!r}, "
                    f"got jump_to(reading={reading!r})"
                )
            self._now = float(reading)
            return self._now

    def __repr__(self) -> str:
        return f"VirtualClock(now={self.now()!r})"
