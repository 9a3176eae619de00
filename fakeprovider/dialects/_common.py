"""Helpers the provider dialects share: timestamps, ids, file URLs, multipart."""

from __future__ import annotations

import email.parser
import email.policy
import functools
import hashlib
import math
from datetime import UTC, datetime
from typing import Any

from ..http import HttpRequest, HttpResponse
from ..messages import JobView, Reply
from .base import BadRequest, Route, check_body

#: Parts of a multipart body read at most. Real creates send a handful; parsing thousands of
#: tiny parts would hold up every other request for seconds.
MAX_MULTIPART_PARTS = 64

#: Where provider dialects serve a job's video when the provider would hand out a CDN URL
#: (Runway ``output``, Replicate ``output``, fal ``video.url``, Luma ``assets.video``).
FILE_ROUTE = Route("GET", "/files/{job_id}.mp4", "content")


@functools.lru_cache(maxsize=4096)
def iso_time(epoch: float, reading: float) -> str:
    """RFC 3339 UTC with milliseconds (cut, not rounded) and ``Z``, as Runway, Replicate and
    Luma write it. Kept for the readings seen last: a job's creation and end are shown on every
    answer about it."""
    moment = datetime.fromtimestamp(epoch + reading, UTC)
    return moment.isoformat(timespec="milliseconds")[:-6] + "Z"  # less its "+00:00"


def unix_time(epoch: float, reading: float) -> int:
    return math.floor(epoch + reading)


def digest(seed: int, number: int, salt: str) -> bytes:
    return hashlib.sha256(f"{salt}:{seed}:{number}".encode()).digest()


def uuid_id(seed: int, number: int, salt: str) -> str:
    """A deterministic id in UUID form (version nibble 4)."""
    text = digest(seed, number, salt).hex()
    return f"{text[:8]}-{text[8:12]}-4{text[13:16]}-a{text[17:20]}-{text[20:32]}"


def file_url(http: HttpRequest, job: JobView) -> str:
    """The job's video: the scenario's ``result.url``, else the fake's file route."""
    if job.result is not None and job.result.url:
        return job.result.url
    return f"{http.base_url}/files/{job.id}.mp4"


def no_content(reply: Reply) -> HttpResponse:
    return HttpResponse(204, b"", None, reply.headers)


def media_type(http: HttpRequest) -> str:
    return http.headers.get("content-type", "").split(";")[0].strip().lower()


def read_multipart(http: HttpRequest) -> dict[str, Any] | None:
    """The parts of a ``multipart/form-data`` body: text fields as strings, files described.

    A file part becomes ``{"filename", "content_type", "size_bytes"}``; None when the body
    is not well-formed multipart. More than ``MAX_MULTIPART_PARTS`` parts are refused
    (``BadRequest`` 400 ``too_many_parts``) before any is parsed. Text that is no valid Unicode (a filename of raw bytes, a
    field in a charset that yields lone surrogates) is refused like a JSON body's
    (``BadRequest`` from ``check_body``).
    """
    ctype = http.headers.get("content-type", "")
    if "boundary=" not in ctype:
        return None
    boundary = _boundary(ctype)
    if boundary is None:
        return None
    parts = http.body.count(b"--" + boundary) - 1  # each part opens with one, the end has one
    if parts > MAX_MULTIPART_PARTS:
        raise BadRequest(
            400,
            "too_many_parts",
            f"The multipart/form-data body has {parts} parts; send at most {MAX_MULTIPART_PARTS}.",
        )
    head = f"Content-Type: {ctype}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + http.body)
    if not message.is_multipart() or message.defects:
        return None
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str) or not name:
            return None
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        if filename is not None:
            fields[name] = {
                "filename": filename,
                "content_type": part.get_content_type(),
                "size_bytes": len(data),
            }
            continue
        try:
            fields[name] = data.decode(part.get_content_charset() or "utf-8")
        except (LookupError, UnicodeDecodeError):
            return None
    check_body(fields)
    return fields


def _boundary(ctype: str) -> bytes | None:
    """The ``boundary`` parameter of a ``multipart/form-data`` content type (RFC 2046: at most
    70 characters of a restricted ASCII set), or None when there is no usable one."""
    for param in ctype.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "boundary":
            value = value.strip().strip('"')
            if 0 < len(value) <= 70 and value.isascii():
                return value.encode("ascii")
            return None
    return None


def page_window(
    query: Any, number_key: str, size_key: str, max_size: int, message: str
) -> tuple[int, int]:
    """The ``(offset, limit)`` a list request's page number and size ask for (1-based pages,
    10 a page unless asked); a 400 ``invalid_parameter`` saying ``message`` when either is
    not an integer in range."""
    try:
        number = int(query.get(number_key, "1"))
        size = int(query.get(size_key, "10"))
    except ValueError:
        number = size = 0
    if not (number >= 1 and 1 <= size <= max_size):
        raise BadRequest(400, "invalid_parameter", message)
    return (number - 1) * size, size


def progress_percent(job: JobView) -> int:
    if job.status in ("succeeded", "completed_with_errors"):
        return 100
    return job.progress or 0
