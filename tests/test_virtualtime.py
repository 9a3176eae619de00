"""Virtual time: timers that land on the clock reading they were set for, and libraries that
compare types by identity (pydantic)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import math
import signal
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider import virtualtime
from fakeprovider.clock import VirtualClock
from fakeprovider.virtualtime import VirtualTime
from tests.thorough import thorough

#: A real monotonic reading at entry that the clock's readings were once added to as they were:
#: ``(130999.39583213006 + 93) - 130999.39583213006`` is 92.99999999999999 in floating point, so
#: an ``asyncio.sleep(93)`` jumped the clock to just short of 93 s, and a job due at 93 s was
#: still rendering (a flaky ``test_async_client_in_process``, one run in some 1,500).
ROUNDING_DOWN_AT_ENTRY = 130999.39583213006


@pytest.mark.parametrize("start", [0.0, 7.0, 2.5])
@pytest.mark.parametrize("real", [ROUNDING_DOWN_AT_ENTRY, 0.25, 86_400.75])
def test_asyncio_sleep_lands_the_clock_exactly_on_its_timer(
    monkeypatch: pytest.MonkeyPatch, real: float, start: float
) -> None:
    monkeypatch.setattr(virtualtime, "_REAL_MONOTONIC", lambda: real)
    clock = VirtualClock(start=start)

    async def main() -> None:
        await asyncio.sleep(93)

    with VirtualTime(clock):
        asyncio.run(main())
        assert clock.now() == start + 93
        assert time.monotonic() >= real  # never behind the real reading at entry


#: The monotonic time at entry (a machine's uptime) up to which a sleep lands exactly: past it
#: (12 days) the loop's time, the uptime plus the clock, rounds by more than asyncio's clock
#: resolution (1 ns), the loop may not see the timer due at the reading it was set for, and
#: the clock moves on by a nanosecond or so.
EXACT_UP_TO = 2.0**20


@thorough(150, deadline=None)
@given(
    real=st.one_of(
        st.sampled_from([ROUNDING_DOWN_AT_ENTRY, 0.25, 86_400.75]),
        st.floats(min_value=0, max_value=EXACT_UP_TO),
    ),
    start=st.one_of(st.sampled_from([0.0, 0.1, 2.5]), st.floats(min_value=0, max_value=1e4)),
    sleeps=st.lists(
        st.one_of(st.sampled_from([0.1, 0.3, 1.7, 93.0]), st.floats(min_value=1e-3, max_value=1e5)),
        min_size=1,
        max_size=6,
    ),
)
def test_each_asyncio_sleep_moves_the_clock_by_exactly_its_delay(
    real: float, start: float, sleeps: list[float]
) -> None:
    """After ``a = clock.now(); await asyncio.sleep(d)`` the clock reads ``a + d``, whatever
    the readings before it and the monotonic time at entry: before, it landed picoseconds
    short as often as not (``(base + a) + d - (base + a)`` rounds), and a job due at ``a + d``
    was still rendering."""
    clock = VirtualClock(start=start)
    landed: list[tuple[float, float]] = []

    async def main() -> None:
        for delay in sleeps:
            before = clock.now()
            await asyncio.sleep(delay)
            landed.append((clock.now(), before + delay))

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(virtualtime, "_REAL_MONOTONIC", lambda: real)
        with VirtualTime(clock):
            asyncio.run(main())
    assert [got for got, _ in landed] == [wanted for _, wanted in landed]


@contextlib.contextmanager
def _within(seconds: float) -> Iterator[None]:
    """Fail, rather than hang, a block that takes longer than ``seconds`` of real time (a loop
    that spins: it once did, past 97 days of uptime)."""

    def give_up(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    before = signal.signal(signal.SIGALRM, give_up)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


@pytest.mark.parametrize("real", [4_194_301.0, 3e7, 1e9])
def test_after_months_of_uptime_a_sleep_ends_within_nanoseconds_after_its_reading(
    monkeypatch: pytest.MonkeyPatch, real: float
) -> None:
    monkeypatch.setattr(virtualtime, "_REAL_MONOTONIC", lambda: real)
    clock = VirtualClock()

    async def main() -> list[float]:
        late = []
        for _ in range(20):
            before = clock.now()
            await asyncio.sleep(1.7)
            late.append(clock.now() - (before + 1.7))
        return late

    with VirtualTime(clock), _within(seconds=20):
        late = asyncio.run(main())
    assert all(0 <= by < 4 * math.ulp(real) + 1e-9 for by in late), late


def test_concurrent_sleepers_each_land_on_their_own_reading_in_order() -> None:
    clock = VirtualClock(start=0.1)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, delay: float) -> None:
        await asyncio.sleep(delay)
        woke.append((name, clock.now()))

    async def main() -> None:
        await asyncio.gather(sleeper("b", 0.3), sleeper("a", 0.2), sleeper("c", 93))

    with VirtualTime(clock):
        asyncio.run(main())
    assert woke == [("a", 0.1 + 0.2), ("b", 0.1 + 0.3), ("c", 0.1 + 93)]


def test_the_monotonic_clock_never_reads_less_than_just_before_entry() -> None:
    clock = VirtualClock(start=12.5)
    before = time.monotonic()
    with VirtualTime(clock):
        entered = time.monotonic()
        clock.advance(1)
        assert time.monotonic() - entered == 1.0
    assert entered >= before


def test_a_pydantic_model_first_built_under_virtual_time_validates_real_datetimes() -> None:
    """SDKs build their models' schemas lazily, maybe while virtual time is active, where the
    ``datetime.datetime`` module attribute is patched: pydantic must still know the type."""
    pydantic = pytest.importorskip("pydantic")

    class Task(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(defer_build=True)
        created_at: datetime.datetime

    with VirtualTime(VirtualClock()):
        assert datetime.datetime is not datetime.datetime.__mro__[1]  # patched meanwhile

        class Later(pydantic.BaseModel):
            created_at: datetime.datetime  # resolved to the patched class

        for model in (Task, Later):
            made = model.model_validate({"created_at": "2026-01-01T00:00:00Z"})
            assert type(made.created_at) is datetime.datetime.__mro__[1]
            assert made.created_at.year == 2026
    assert type(Task.model_validate({"created_at": "2026-01-01T00:00:00Z"}).created_at) is (
        datetime.datetime
    )
