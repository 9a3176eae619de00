"""What adapters, dialects, webhooks and the engine say to each other.

A dialect parses the wire into a ``Request``; the engine answers with a ``Reply`` (a
``JobView`` of the job, or a ``Refusal``'s ``ApiError``) and announces each ``StateChange``;
dialects and webhooks render those. Here too are the words the fake says itself (the refusals
and the message a job carries in each status), how job ids are made, the deterministic video
bytes, and what the journal keeps of a request's body and credential.

Pure: dataclasses and functions of their arguments, no I/O and no state.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .http import error_code, fast_constructor
from .scenario import TERMINAL_STATUSES, Fault, JobError, Result

__all__ = [
    "Action",
    "ApiError",
    "JobView",
    "Refusal",
    "Reply",
    "Request",
    "RequestKind",
    "StateChange",
    "credential_fingerprint",
    "default_job_id",
    "fast_change",
    "fast_reply",
    "fast_view",
    "job_message",
    "request_digest",
    "scripted_error",
    "video_bytes",
]

RequestKind = Literal["submit", "status", "content", "cancel", "list", "unknown"]
Action = Literal["respond", "reset", "lose_response"]


@dataclass(frozen=True)
class Request:
    """A request as the engine sees it, whatever the dialect."""

    kind: RequestKind
    method: str
    path: str
    job_id: str | None = None
    body: Mapping[str, Any] | None = None
    credential: str | None = None
    idempotency_key: str | None = None
    client: str = "unknown"
    callback_url: str | None = None
    #: Seconds a submit asks the server to hold its answer while the job runs (Replicate's
    #: ``Prefer: wait``): the answer comes when the job ends or the hold runs out.
    hold: float = 0.0
    #: Set by the dialect when the request is malformed: the 4xx to answer and why.
    problem: str | None = None
    problem_status: int = 400
    problem_code: str = "invalid_request"
    #: For a list: which jobs the client asked for (a provider's filters; all when None),
    #: and which page of them (offset, count), oldest first unless ``newest_first``. The
    #: reply, and so the journal, holds exactly the jobs shown; ``Reply.total`` counts every
    #: job the filter kept.
    select: Callable[[JobView], bool] | None = field(default=None, compare=False)
    #: For a list: only jobs in one of these statuses (``JobView.status``), before ``select``
    #: picks among them. The engine keeps its jobs by status, so a page filtered by status
    #: alone costs the page, not every job; a dialect sets both when its filter is narrower.
    statuses: frozenset[str] | None = None
    page: tuple[int, int] | None = None
    newest_first: bool = False
    #: For a cancel: the statuses a provider cancels from (any unfinished one when None).
    #: Cancelling a job in another unfinished status is refused: 409 ``job_not_cancellable``.
    cancel_from: frozenset[str] | None = None


@dataclass(frozen=True)
class ApiError:
    code: str
    message: str


@dataclass(frozen=True)
class JobView:
    """A job as one response shows it."""

    id: str
    spec_index: int
    status: str
    progress: int | None
    created_at: float
    status_since: float
    now: float
    poll_after: float | None
    estimated_duration: float | None
    message: str
    request: Mapping[str, Any]
    result: Result | None
    error: JobError | None
    summary: Mapping[str, Any] | None
    callback_url: str | None
    #: Accepted over the concurrency limit by a provider that queues such jobs (Runway's
    #: ``THROTTLED``): the job is ``queued`` and its timeline has not started.
    throttled: bool = False

    @property
    def done(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def elapsed(self) -> float:
        return self.now - self.created_at

    @property
    def completed_at(self) -> float | None:
        return self.status_since if self.done else None


@dataclass(frozen=True)
class Reply:
    """What to answer. ``respond_at`` is the clock reading for the ``Date`` header."""

    seq: int
    request: Request
    status_code: int
    respond_at: float
    delay: float = 0.0
    action: Action = "respond"
    job: JobView | None = None
    jobs: tuple[JobView, ...] = ()
    error: ApiError | None = None
    content: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    fault: Fault | None = None
    created: bool = False
    #: For a list: how many jobs matched the request's filter (``jobs`` is one page of them).
    total: int = 0

    @property
    def scripted(self) -> bool:
        """True when a fault replaced the normal answer."""
        return self.fault is not None and self.fault.status is not None


#: ``JobView(...)`` for the hot path, the same arguments (``http.fast_constructor``): the engine
#: makes a view per request, and a frozen dataclass's ``__init__`` sets each field through
#: ``object.__setattr__``, which costs more than the rest of the view. Equal to the dataclass's
#: own, about as small (288 B against 225 B: its ``__dict__`` is made, sharing the class's keys).
fast_view = fast_constructor(JobView, keyword_only=False)
#: ``Reply(...)`` for the hot path, as ``fast_view`` is ``JobView(...)``.
fast_reply = fast_constructor(Reply, keyword_only=False)


@dataclass(frozen=True)
class StateChange:
    """A job entered a new status (for webhooks and reports).

    ``at`` is the scripted instant of the change (a timed step's own time, even when the
    engine notices it later); ``job`` is the job as it looked right then.
    """

    job_id: str
    status: str
    at: float
    job: JobView | None = field(default=None, compare=False, repr=False)


#: ``StateChange(...)`` for the hot path (a submit makes one), as ``fast_view`` is ``JobView(...)``.
fast_change = fast_constructor(StateChange, keyword_only=False)


# --- refusals ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """A request the engine refuses: the status to answer, the error code and the sentence."""

    status: int
    code: str
    message: str

    @property
    def error(self) -> ApiError:
        return ApiError(self.code, self.message)

    @classmethod
    def of(cls, request: Request) -> Refusal | None:
        """The refusal a dialect marked ``request`` with (a malformed request), if any."""
        if request.problem is None:
            return None
        return cls(request.problem_status, request.problem_code, request.problem)

    @classmethod
    def no_route(cls, method: str, path: str) -> Refusal:
        return cls(404, "route_not_found", f"No route for {method} {path}.")

    @classmethod
    def missing_credentials(cls) -> Refusal:
        return cls(401, "missing_credentials", "Send 'Authorization: Bearer <token>'.")

    @classmethod
    def invalid_token(cls) -> Refusal:
        return cls(401, "invalid_token", "The token is not valid.")

    @classmethod
    def token_revoked(cls) -> Refusal:
        message = "The token has been revoked; retrying with it will not help."
        return cls(401, "token_revoked", message)

    @classmethod
    def rate_limited(cls) -> Refusal:
        return cls(429, "rate_limited", "Too many requests for this API key.")

    @classmethod
    def too_many_active_jobs(cls, limit: int) -> Refusal:
        message = f"At most {limit} jobs may run at once; wait for one to finish."
        return cls(429, "too_many_active_jobs", message)

    @classmethod
    def idempotency_key_reused(cls, key: str) -> Refusal:
        message = f"Idempotency-Key {key!r} was first used with a different request body."
        return cls(422, "idempotency_key_reused", message)

    @classmethod
    def job_not_found(cls, job_id: str | None) -> Refusal:
        return cls(404, "job_not_found", f"There is no job {job_id!r}.")

    @classmethod
    def no_content(cls, job_id: str, status: str) -> Refusal:
        return cls(409, "no_content", f"Job {job_id} ended {status!r}; it has no video.")

    @classmethod
    def job_not_ready(cls, job_id: str, status: str) -> Refusal:
        message = f"Job {job_id} is {status!r}; the video is NOT ready yet."
        return cls(409, "job_not_ready", message)

    @classmethod
    def job_already_terminal(cls, job_id: str, status: str) -> Refusal:
        return cls(409, "job_already_terminal", f"Job {job_id} already ended {status!r}.")

    @classmethod
    def job_not_cancellable(cls, job_id: str, status: str, allowed: Collection[str]) -> Refusal:
        either = " or ".join(repr(s) for s in sorted(allowed))
        message = f"Job {job_id} is {status!r}; only a job that is {either} can be cancelled."
        return cls(409, "job_not_cancellable", message)


def scripted_error(fault: str, status: int) -> ApiError | None:
    """The error a scripted fault's answer carries: none below 400."""
    if status < 400:
        return None
    return ApiError(error_code(status), f"Scripted fault {fault!r}.")


# --- what a job says -----------------------------------------------------------------------


def job_message(status: str, poll_after: float | None) -> str:
    """The message a job carries in ``status`` when its timeline step gives none."""
    wait = f" after at least {poll_after:g} seconds" if poll_after is not None else ""
    if status == "queued":
        return f"The job is queued and NOT complete. Do not report success. Check status_url again{wait}."
    if status == "processing":
        return f"The job is processing and NOT complete. Do not report success. Check status_url again{wait}."
    if status == "succeeded":
        return "The job succeeded. Download the result once from the content URL."
    if status == "failed":
        return "The job failed. Do not retry the status read; report the error."
    if status == "cancelled":
        return "The job was cancelled. There is no result."
    return "The job completed with errors: part of the output is missing. See the summary."


def default_job_id(seed: int, number: int) -> str:
    """The id of the ``number``-th job created with ``seed``, unless a dialect makes its own."""
    return "job_" + _sha256(f"{seed}:{number}".encode()).hexdigest()[:12]


def video_bytes(job_id: str, size: int) -> bytes:
    """Deterministic bytes for a job's video: an MP4 ``ftyp`` box, then filler."""
    head = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"
    block = hashlib.sha256(job_id.encode()).digest()
    body = head + block * ((size - len(head)) // len(block) + 1)
    return body[:size]


# --- what the journal keeps of a request ---------------------------------------------------


def request_digest(body: Mapping[str, Any] | None) -> str:
    """A short digest of a submit's body (``Entry.request_digest``): equal bodies, equal digests.

    The SHA-256 of ``json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)``,
    encoded (ASCII: ``json.dumps`` escapes the rest).

    A body of one level whose keys are strings and values strings, integers, booleans or
    None (what a submit's body usually is) is written by msgspec, keys sorted: the same bytes
    as ``json.dumps`` when they are ASCII without DEL (``json.dumps`` escapes the others,
    msgspec writes them raw: then, and for anything else, ``json.dumps``'s text is made).
    A third of the instructions of the C encoder's text then encoded (property-tested equal).
    """
    body = body or {}
    if _SORTED is not None and _ONE_KEY is not None and type(body) is dict:
        for key, value in body.items():
            if type(key) is not str or type(value) not in _FLAT_TYPES:
                break
        else:
            try:
                # (one key is in sorted order as it is: msgspec writes it without sorting)
                data: bytes | None = (_SORTED if len(body) > 1 else _ONE_KEY)(body)
            except Exception:  # a lone surrogate: json.dumps escapes it
                data = None
            # (DEL looked for as a byte value: ``bytes in bytes`` first tries the needle as an
            # int, and the error it makes and drops cost more than the search, 2,300
            # instructions a submit)
            if data is not None and data.isascii() and 0x7F not in data:
                return (_sha256 if len(data) < _LONG else _sha256_long)(data).hexdigest()[:16]
    data = _digest_json(body).encode()
    return (_sha256 if len(data) < _LONG else _sha256_long)(data).hexdigest()[:16]


def _digest_json(body: Mapping[str, Any]) -> str:
    """``json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)``.

    ``json.dumps`` with options builds a new encoder per call, and the encoder's ``encode``
    a new C encoder per call: this makes the C encoder once (as ``encode`` makes it, without
    the check for circular references: a body is decoded JSON, which has none).
    """
    if _DIGEST_C is None:  # pragma: no cover - CPython has the C encoder
        return _DIGEST_ENCODER.encode(body)
    return "".join(_DIGEST_C(body, 0))


_DIGEST_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
_MAKE_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_DIGEST_C: Callable[[Any, int], Any] | None = (
    None
    if _MAKE_C_ENCODER is None
    else _MAKE_C_ENCODER(
        None, str, json.encoder.encode_basestring_ascii, None, ":", ",", True, False, True
    )
)
#: The values ``request_digest`` has msgspec write: it writes them as ``json.dumps`` does
#: (floats it may not: ``1e-05``, ``NaN``...; nor what ``default=str`` writes).
_FLAT_TYPES = frozenset({str, int, bool, type(None)})


def _msgspec_encoder(order: Literal["sorted"] | None) -> Callable[[Any], bytes] | None:
    """msgspec's JSON encoder (dict keys sorted with ``order="sorted"``), or None where msgspec
    is missing."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - tests/test_messages.py runs without it too
        return None
    encode: Callable[[Any], bytes] = msgspec.json.Encoder(order=order).encode
    return encode


_SORTED = _msgspec_encoder("sorted")
#: ``_SORTED`` for a body of one key, which needs no sorting: the same bytes, without the sorted
#: encoder's list of the keys (some 800 instructions a submit of a lone prompt).
_ONE_KEY = _msgspec_encoder(None)


class _Hash(Protocol):
    def hexdigest(self) -> str: ...


def _builtin_sha256() -> Callable[[bytes], _Hash]:
    """CPython's own SHA-256 (``_sha2``, ``_sha256`` before 3.12), else ``hashlib``'s: the
    same digest, without OpenSSL's set-up per hash (about 2,000 instructions of the 7,000 a
    short input's digest costs through ``hashlib.sha256``; the same time or less)."""
    for name in ("_sha2", "_sha256"):
        try:
            made: Callable[[bytes], _Hash] = importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
        return made
    return hashlib.sha256  # pragma: no cover - CPython builds have one


#: SHA-256 for the short inputs hashed per request (a job's id, a short body's digest).
_sha256 = _builtin_sha256()
#: SHA-256 for inputs of ``_LONG`` bytes or more (a body's digest, a prompt of a few words
#: up): OpenSSL's, which uses the CPU's SHA instructions where it has them. A 1.5 kB body
#: took 5.5 us through CPython's own and 1.3 us through OpenSSL's on a machine with SHA-NI;
#: under valgrind, which has no SHA-NI, 76,000 instructions against 48,500. Below 64 bytes
#: OpenSSL's set-up per hash costs more than the compression saves.
_sha256_long: Callable[[bytes], _Hash] = hashlib.sha256
_LONG = 64


def credential_fingerprint(credential: str | None) -> str | None:
    """What the journal records of a credential (``Entry.credential``): never the token itself."""
    if credential is None:
        return None
    return "cred_" + _sha256(credential.encode()).hexdigest()[:8]
