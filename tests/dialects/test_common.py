"""The helpers provider dialects share: multipart bodies."""

from __future__ import annotations

import pytest

from fakeprovider.dialects._common import MAX_MULTIPART_PARTS, read_multipart
from fakeprovider.dialects.base import BadRequest
from fakeprovider.http import HttpRequest

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
