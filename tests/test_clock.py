"""Real and virtual clocks."""

from __future__ import annotations

import time

import pytest

from fakeprovider.clock import DEFAULT_EPOCH, Clock, RealClock, VirtualClock


def test_virtual_clock_moves_only_when_told() -> None:
    clock = VirtualClock()
    assert (clock.now(), clock.epoch) == (0.0, DEFAULT_EPOCH)
    assert clock.advance(2.5) == 2.5
    assert clock.jump_to(10.0) == 10.0
    assert clock.now() == 10.0


def test_virtual_clock_refuses_to_go_backwards() -> None:
    clock = VirtualClock(start=5.0)
    with pytest.raises(
        ValueError, match=r"^a virtual clock never goes backwards; got advance\(seconds=-1\)$"
    ):
        clock.advance(-1)
    with pytest.raises(
        ValueError,
        match=r"^a virtual clock never goes backwards; it reads 5.0, got jump_to\(reading=4.0\)$",
    ):
        clock.jump_to(4.0)


def test_virtual_clock_cannot_start_before_zero() -> None:
    with pytest.raises(ValueError, match=r"^a virtual clock cannot start before 0, got start=-1$"):
        VirtualClock(start=-1)


def test_real_clock_counts_from_construction_and_never_goes_back() -> None:
    readings = iter([100.0, 103.0, 102.0, 104.5])
    clock = RealClock(monotonic=lambda: next(readings), wall=lambda: 1_000.0)
    assert [clock.now(), clock.now(), clock.now()] == [3.0, 3.0, 4.5]
    assert clock.epoch == 1_000.0


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(VirtualClock(), Clock)
    assert isinstance(RealClock(), Clock)


class _Refused:
    """A lock that must not be taken."""

    def __enter__(self) -> None:
        raise AssertionError("the lock was taken")

    def __exit__(self, *exc: object) -> None:
        pass


def test_a_real_clock_on_the_machines_clock_reads_it_without_a_lock() -> None:
    clock = RealClock()
    clock._lock = _Refused()  # type: ignore[assignment]
    first = clock.now()
    assert 0.0 <= first <= clock.now()


def test_a_real_clock_reads_the_same_without_the_lock_as_with_it() -> None:
    # (the reading with the lock and max() is what every RealClock did before)
    clock = RealClock()
    readings = []
    for _ in range(1_000):
        readings += [clock.now(), RealClock.now(clock)]
    assert readings == sorted(readings)
    assert readings[0] >= 0.0


def test_a_replaced_monotonic_never_takes_a_real_clock_back() -> None:
    clock = RealClock()
    before = clock.now()
    clock.monotonic = lambda: 0.0  # far before the clock's start
    assert clock.now() == clock.now() >= before
    assert clock.monotonic() == 0.0
    clock.monotonic = time.monotonic  # (not from zero again: the readings so far are kept)
    assert before <= clock.now()


def test_a_real_clock_subclass_reads_by_its_own_now() -> None:
    class Late(RealClock):
        def now(self) -> float:
            return super().now() + 100.0

    clock = Late()
    assert 100.0 <= clock.now() < 200.0
