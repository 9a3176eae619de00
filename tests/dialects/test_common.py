"""The helpers provider dialects share: multipart bodies and timestamps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider.dialects._common import MAX_MULTIPART_PARTS, iso_time, read_multipart
from fakeprovider.dialects.base import BadRequest
from fakeprovider.dialects.dashscope import DashScopeDialect
from fakeprovider.http import HttpRequest
from fakeprovider.settings import RunSettings

BOUNDARY = "xyzBOUNDARY"


def multipart(count: int, boundary: str = BOUNDARY) -> HttpRequest:
    parts = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nv{i}\r\n'
        for i in range(count)
    )
    return HttpRequest(
        method="POST",
        path="/v1/videos",
        headers={"content-type": f'multipart/form-data; boundary="{boundary}"'},
        body=(parts + f"--{boundary}--\r\n").encode(),
    )


def test_multipart_up_to_the_part_limit_is_read() -> None:
    fields = read_multipart(multipart(MAX_MULTIPART_PARTS))
    assert fields is not None
    assert (len(fields), fields["f0"], fields["f63"]) == (64, "v0", "v63")


@pytest.mark.parametrize("count", [MAX_MULTIPART_PARTS + 1, 17_000])
def test_multipart_with_too_many_parts_is_refused_before_parsing(count: int) -> None:
    with pytest.raises(BadRequest) as refused:
        read_multipart(multipart(count))
    assert (refused.value.status, refused.value.code, refused.value.message) == (
        400,
        "too_many_parts",
        f"The multipart/form-data body has {count} parts; send at most 64.",
    )


@pytest.mark.parametrize("ctype", ["multipart/form-data; boundary=", "multipart/form-data"])
def test_multipart_without_a_usable_boundary_is_not_multipart(ctype: str) -> None:
    request = HttpRequest(method="POST", path="/", headers={"content-type": ctype}, body=b"x")
    assert read_multipart(request) is None


def _strftime_time(epoch: float, reading: float) -> str:
    moment = datetime.fromtimestamp(epoch + reading, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@given(epoch=st.floats(0, 4e9), reading=st.floats(0, 1e7))
def test_iso_time_writes_milliseconds_cut_and_z(epoch: float, reading: float) -> None:
    assert iso_time(epoch, reading) == _strftime_time(epoch, reading)
    assert iso_time(epoch, reading) == _strftime_time(epoch, reading)  # once more, remembered


def test_iso_time_examples() -> None:
    assert iso_time(1_700_000_000.0, 0.0) == "2023-11-14T22:13:20.000Z"
    assert iso_time(1_700_000_000.0, 1.2399) == "2023-11-14T22:13:21.239Z"


@given(epoch=st.floats(0, 4e9), reading=st.floats(0, 1e7))
def test_dashscope_times_are_the_iso_time_with_a_space_and_no_zone(
    epoch: float, reading: float
) -> None:
    moment = datetime.fromtimestamp(epoch + reading, UTC)
    expected = moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    assert DashScopeDialect(RunSettings(epoch=epoch))._time(reading) == expected
