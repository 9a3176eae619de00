"""Virtual time and libraries that compare types by identity (pydantic)."""

from __future__ import annotations

import datetime

import pytest

from fakeprovider.clock import VirtualClock
from fakeprovider.virtualtime import VirtualTime


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
