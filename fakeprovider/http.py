"""The neutral HTTP layer: what every adapter and dialect means by a request and a response.

``HttpRequest`` and ``HttpResponse`` are what the adapters (the ASGI app, the in-process
transports) hand to a dialect and get back from it, so a dialect works the same over real
sockets and in virtual time. Around them: JSON answers, the check that an answer can go on the
wire at all and the making safe of header values, the error code each HTTP status is known by,
HTTP-dates in the three RFC 9110 forms, and the one ``Retry-After`` writer and reader (the
engine writes and journals its own with them, the webhook dispatcher reads a receiver's).

Pure and a leaf: no I/O, no clock, and it imports nothing of fakeprovider.
"""

from __future__ import annotations

import dataclasses
import datetime
import email.utils
import functools
import json
import json.encoder
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar
from urllib.parse import quote

__all__ = [
    "DATE_FORMS",
    "NO_BODY",
    "RETRY_AFTER_FORMS",
    "DateForm",
    "HttpRequest",
    "HttpResponse",
    "RetryAfterForm",
    "RetryAfterValue",
    "all_safe_header_values",
    "client_of",
    "error_code",
    "error_response",
    "fast_constructor",
    "format_http_date",
    "is_safe_header_value",
    "json_response",
    "json_text",
    "parse_http_date",
    "parse_retry_after",
    "read_retry_after",
    "retry_after_header",
    "safe_header_value",
    "wire_problem",
]


def client_of(client_id: str | None, peer: str) -> str:
    """The client a request came from: its ``X-Client-Id``, else the peer's host, not its port,
    which changes whenever a client opens a new connection (an SDK's reconnect must not look
    like a second client). The one rule, for the API and the admin routes alike."""
    if client_id:
        return client_id
    host, sep, port = peer.rpartition(":")
    return host if sep and port.isdigit() else peer


_T = TypeVar("_T")


def fast_constructor(cls: type[_T], *, keyword_only: bool = True) -> Callable[..., _T]:
    """What ``cls(**values)`` makes, for a frozen dataclass, without the cost of its ``__init__``.

    A frozen dataclass sets each field through ``object.__setattr__`` (about 0.1 us a field);
    the function returned stores them straight into the instance's ``__dict__`` instead: the
    fields in declaration order, the defaults (and default factories) for those not given, so the instance
    is equal, field for field and in the same order, to the one ``cls`` makes. Keyword arguments
    only, named as the fields (``keyword_only=False``: positional ones too, in field order, as
    ``cls`` takes them); an unknown or missing one raises ``TypeError``. It is written out
    for ``cls``'s fields as ``dataclasses`` writes ``__init__``. A class this cannot build
    exactly as its ``__init__`` does (slots, ``__post_init__``, a field outside ``__init__``,
    an ``InitVar``, a field named as the function's own locals) gets ``cls`` itself.
    """
    if not dataclasses.is_dataclass(cls) or "__slots__" in vars(cls):
        return cls
    fields = dataclasses.fields(cls)
    if (
        hasattr(cls, "__post_init__")
        or len(fields) != len(cls.__dataclass_fields__)
        or not all(f.init and f.name.isidentifier() for f in fields)
        or any(f.name in _OWN_NAMES or f.name.startswith(("default_", "factory_")) for f in fields)
    ):
        return cls
    missing = dataclasses.MISSING
    namespace: dict[str, Any] = {"cls": cls, "new": object.__new__}
    parameters = []
    for f in fields:
        if f.default is not missing:
            namespace[f"default_{f.name}"] = f.default
            parameters.append(f"{f.name}=default_{f.name}")
        elif f.default_factory is not missing:
            namespace[f"factory_{f.name}"] = f.default_factory
            parameters.append(f"{f.name}=unset")
        else:
            parameters.append(f.name)
    namespace["unset"] = _UNSET
    # stored one by one into the instance's own ``__dict__``, in field order: it shares its
    # keys with every other instance's, as a dict the dataclass's ``__init__`` fills does (a
    # new dict given as ``__dict__`` would hold its own keys: twice the memory)
    state = "".join(
        f"    state[{f.name!r}] = {f.name}\n"
        if f.default_factory is missing
        else f"    state[{f.name!r}] = factory_{f.name}() if {f.name} is unset else {f.name}\n"
        for f in fields
    )
    source = (
        f"def {cls.__name__}({'*, ' if keyword_only else ''}{', '.join(parameters)}):\n"
        f"    instance = new(cls)\n"
        f"    state = instance.__dict__\n"
        f"{state}"
        f"    return instance\n"
    )
    exec(source, namespace)  # fixed text from field names (identifiers), as dataclasses does
    make: Callable[..., _T] = namespace[cls.__name__]
    make.__qualname__ = cls.__qualname__  # what a TypeError names
    return make


#: Stands for a field with a default factory that was not given.
_UNSET: Any = object()
#: The names a ``fast_constructor`` function uses itself (a field so named would hide one).
_OWN_NAMES = frozenset({"cls", "new", "unset", "instance", "state"})


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    #: Header names in lower case.
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    peer: str = "unknown"
    base_url: str = "http://127.0.0.1"
    #: Set by the adapter when the body exceeded this many bytes (and was dropped).
    too_large: int | None = None

    @property
    def client(self) -> str:
        """Who sent the request, as the journal names clients (``client_of``)."""
        return client_of(self.headers.get("x-client-id"), self.peer)

    @property
    def bearer(self) -> str | None:
        return self.token("bearer")

    def token(self, *schemes: str) -> str | None:
        """The ``Authorization`` credential when its scheme is one of ``schemes`` (lower case)."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token.strip() or None if scheme.lower() in schemes else None


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes = b""
    media_type: str | None = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


if TYPE_CHECKING:
    _response = HttpResponse
else:
    #: ``HttpResponse(...)``, the same answer, made without the frozen per-field ``__init__``
    #: (positional arguments too, in field order).
    _response = fast_constructor(HttpResponse, keyword_only=False)


# --- JSON answers --------------------------------------------------------------------------


#: ``json.dumps(payload, separators=(",", ":"), ensure_ascii=False)``, without building an
#: encoder per answer.
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _one_shot_encoder() -> Callable[[Any, int], Any] | None:
    """The C encoder ``_JSON.encode`` makes on every call, made once (None without the C
    accelerator): called with the payload and 0, it gives the JSON text's chunks. It keeps no
    state between calls: no circular-reference markers (answers are trees built per request;
    a payload that is not one falls back to ``_JSON.encode``)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has _json
        return None
    encoder: Callable[[Any, int], Any] = make(
        None,
        _JSON.default,
        json.encoder.encode_basestring,
        None,
        _JSON.key_separator,
        _JSON.item_separator,
        False,
        False,
        True,
    )
    return encoder


_CHUNKS = _one_shot_encoder()
_join = "".join


def json_text(payload: Any) -> str:
    """``json.dumps(payload, separators=(",", ":"), ensure_ascii=False)``, the same text."""
    if _CHUNKS is not None and not isinstance(payload, str):
        try:
            return _join(_CHUNKS(payload, 0))
        except (RecursionError, ValueError, TypeError):  # a cycle, NaN refused, not JSON...
            pass  # the general encoder says what is wrong, as it always did
    return _JSON.encode(payload)


def json_response(
    status: int, payload: Any, headers: Sequence[tuple[str, str]] = ()
) -> HttpResponse:
    # A lone surrogate (refused in request bodies, but a scenario or a path may still carry
    # one) comes out as its JSON escape: rendering an answer must never fail.
    if _CHUNKS is not None and payload.__class__ is dict:  # json_text(payload), in place
        try:
            text = _join(_CHUNKS(payload, 0))
        except (RecursionError, ValueError, TypeError):
            text = _JSON.encode(payload)
    else:
        text = json_text(payload)
    body = text.encode("utf-8", "backslashreplace")
    return _response(status, body, "application/json", tuple(headers))


def error_response(
    status: int, code: str, message: str, headers: Sequence[tuple[str, str]] = ()
) -> HttpResponse:
    """The generic error answer: ``{"error": {"code": ..., "message": ...}}``."""
    return json_response(status, {"error": {"code": code, "message": message}}, headers)


#: The error code an answer with each HTTP status is known by (``http_<status>`` for others).
_ERROR_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    408: "request_timeout",
    409: "conflict",
    413: "payload_too_large",
    422: "unprocessable_entity",
    429: "rate_limited",
    500: "internal_error",
    502: "bad_gateway",
    503: "service_unavailable",
    504: "gateway_timeout",
}


def error_code(status: int) -> str:
    """The error code for an answer with ``status`` (``rate_limited`` for 429, ``http_418``...)."""
    return _ERROR_CODES.get(status, f"http_{status}")


# --- what HTTP/1.1 can carry ---------------------------------------------------------------

#: What HTTP/1.1 allows as a header name (RFC 9110 token).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
#: Headers the server writes itself from the body: a scenario that sets them breaks the framing.
_FRAMING = frozenset({"content-length", "transfer-encoding"})
#: Statuses whose answers carry no body (RFC 9110 6.4.1).
NO_BODY = frozenset({204, 304})


def wire_problem(response: HttpResponse) -> str | None:
    """Why HTTP/1.1 cannot carry ``response`` as a final answer, or None when it can.

    A scenario may script any status and header; these it cannot send (uvicorn's HTTP stack
    would refuse them after the request was journaled, and drop the connection).
    """
    if not 200 <= response.status <= 599:
        return (
            f"status {response.status} cannot be a final answer (HTTP/1.1 final statuses are"
            " 200 to 599)"
        )
    for name, _ in response.headers:
        problem = _name_problem(name)
        if problem is not None:
            return problem
    return None


@functools.lru_cache(maxsize=256)
def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot be sent as a header, or None. Remembered: the names an answer
    carries are a handful, the dialects' and the scenario's."""
    if not _TOKEN.match(name):
        return (
            f"header name {name!r} is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)"
        )
    if name.lower() in _FRAMING:
        return f"header {name!r} is written by the server from the body and cannot be scripted"
    return None


def is_safe_header_value(value: str) -> bool:
    """Whether ``safe_header_value(value) == value``, without making the safe value: visible
    ASCII and spaces, none leading or trailing."""
    return value.isascii() and value.isprintable() and value.strip(" ") == value


def all_safe_header_values(headers: Iterable[tuple[str, str]]) -> bool:
    """Whether ``is_safe_header_value`` holds for every value of ``headers``."""
    for _, value in headers:
        if not (value.isascii() and value.isprintable() and value.strip(" ") == value):
            return False
    return True


def safe_header_value(value: str) -> str:
    """``value`` with every character but visible ASCII and space percent-encoded (as UTF-8).

    Leading and trailing spaces go (HTTP/1.1 cannot carry them). Header values a dialect
    echoes from the request (a job id from the path, say) may hold
    anything the percent-decoded path held: a NUL, U+FFFD, a bidi override. Sent as they
    are, they would make the answer fail after the request was journaled.
    """
    value = value.strip(" ")  # HTTP field values neither start nor end with whitespace
    if value.isascii() and value.isprintable():
        return value
    return "".join(
        c if c.isascii() and c.isprintable() else quote(c.encode("utf-8", "surrogatepass"))
        for c in value
    )


# --- HTTP-dates ----------------------------------------------------------------------------

DateForm = Literal["imf", "rfc850", "asctime"]
#: The three HTTP-date forms of RFC 9110 section 5.6.7.
DATE_FORMS: tuple[DateForm, ...] = ("imf", "rfc850", "asctime")

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_LONG_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_http_date(unix: float, form: DateForm = "imf") -> str:
    """``unix`` (rounded down to the second) as an HTTP-date in ``form``.

    ``imf``: ``Sun, 06 Nov 1994 08:49:37 GMT``; ``rfc850``: ``Sunday, 06-Nov-94 08:49:37 GMT``;
    ``asctime``: ``Sun Nov  6 08:49:37 1994``.
    """
    t = time.gmtime(math.floor(unix))
    clock = f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    if form == "imf":
        return (
            f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} {clock} GMT"
        )
    if form == "rfc850":
        year = t.tm_year % 100
        return f"{_LONG_DAYS[t.tm_wday]}, {t.tm_mday:02d}-{_MONTHS[t.tm_mon - 1]}-{year:02d} {clock} GMT"
    if form == "asctime":
        return f"{_DAYS[t.tm_wday]} {_MONTHS[t.tm_mon - 1]} {t.tm_mday:2d} {clock} {t.tm_year}"
    raise ValueError(f"unknown HTTP-date form {form!r}; expected 'imf', 'rfc850' or 'asctime'")


def parse_http_date(text: str) -> float | None:
    """Unix time of an HTTP-date in any of the three forms, or None if it is not one."""
    try:
        parsed = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # asctime carries no zone; HTTP-dates are always GMT
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.timestamp()


# --- Retry-After ---------------------------------------------------------------------------

#: How a ``Retry-After`` is written: delay-seconds, an HTTP-date in one of its three forms, or
#: whole milliseconds in a ``retry-after-ms`` header (as OpenAI's and Anthropic's APIs send).
RetryAfterForm = Literal["seconds", "imf", "rfc850", "asctime", "ms"]
#: The forms, simplest first.
RETRY_AFTER_FORMS: tuple[RetryAfterForm, ...] = ("seconds", *DATE_FORMS, "ms")
#: How far below a whole second a computed wait may be and still count as it (float sums).
_SLACK = 1e-9


class RetryAfterValue(NamedTuple):
    """A ``Retry-After`` (or ``retry-after-ms``) as read: the value as sent, the instant it
    means (None when it means none), the header's name in lower case, and the form it was
    written in (a ``RetryAfterForm``, or ``invalid``)."""

    raw: str
    not_before: float | None
    header: str
    form: str


def _ceil(value: float) -> int:
    """Round up, but not for float noise: 3.0000000000000004 s of computed wait is 3 s."""
    return math.ceil(value - _SLACK)


def retry_after_header(wait: float, form: RetryAfterForm, *, sent_at: float) -> tuple[str, str]:
    """The header telling a client to wait ``wait`` seconds after an answer dated ``sent_at``
    (Unix time): a wait is rounded up to the whole unit, an HTTP-date to the second after."""
    if form == "ms":
        return ("retry-after-ms", str(max(0, _ceil(wait * 1000))))
    if form == "seconds":
        return ("Retry-After", str(max(0, _ceil(wait))))
    return ("Retry-After", format_http_date(_ceil(sent_at + wait), form))


def parse_retry_after(
    value: str, *, sent_at: float, epoch: float = 0.0, header: str = "retry-after"
) -> RetryAfterValue:
    """What ``value`` of ``header`` means, on the caller's clock.

    ``sent_at`` is the reading the answer is dated, ``epoch`` the Unix time of reading 0: a
    delay counts from ``sent_at``, an HTTP-date is absolute. ``retry-after-ms`` holds a number
    of milliseconds; ``retry-after`` delay-seconds (digits only) or an HTTP-date.
    """
    if header == "retry-after-ms":
        try:
            delay = float(value) / 1000
        except ValueError:
            return RetryAfterValue(value, None, header, "invalid")
        return RetryAfterValue(value, sent_at + delay, header, "ms")
    text = value.strip()
    if text.isdigit():
        return RetryAfterValue(value, sent_at + int(text), header, "seconds")
    parsed = parse_http_date(text)
    if parsed is None:
        return RetryAfterValue(value, None, header, "invalid")
    return RetryAfterValue(value, parsed - epoch, header, _date_form(text))


def read_retry_after(
    headers: Iterable[tuple[str, str]], *, sent_at: float, epoch: float = 0.0
) -> RetryAfterValue | None:
    """The first ``Retry-After`` or ``retry-after-ms`` among ``headers``, read as
    ``parse_retry_after`` does; None when there is neither."""
    for name, value in headers:
        lowered = name.lower()
        if lowered in ("retry-after", "retry-after-ms"):
            return parse_retry_after(value, sent_at=sent_at, epoch=epoch, header=lowered)
    return None


def _date_form(text: str) -> DateForm:
    if "," not in text:
        return "asctime"
    return "rfc850" if "-" in text else "imf"
