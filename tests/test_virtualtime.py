"""Virtual time: timers that land on the clock reading they were set for, and libraries that
compare types by identity (pydantic)."""

from __future__ import annotations

import asyncio
import datetime
import time

import pytest

from fakeprovider import virtualtime
from fakeprovider.clock import VirtualClock
from fakeprovider.virtualtime import VirtualTime

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
