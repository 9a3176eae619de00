"""What every dialect shares: path routing, body reading, refusals and the default shapes.

A dialect turns an ``HttpRequest`` (see ``fakeprovider.http``) into an engine ``Request`` and
an engine ``Reply`` into an ``HttpResponse``. Both adapters (the ASGI app and the in-process
transport) speak only those neutral types, so a dialect works the same over real sockets and in
virtual time.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..http import (
    HttpRequest,
    HttpResponse,
    client_of,
    error_response,
    fast_constructor,
    json_response,
)
from ..messages import ApiError, JobView, Reply, Request, RequestKind, default_job_id
from ..settings import RunSettings
from ..webhooks import Outgoing, WebhookMessage

__all__ = ["BadRequest", "Dialect", "Route", "new_request", "route_request"]

if TYPE_CHECKING:
    new_request = Request
else:
    #: ``Request(**fields)``, the same request, made without a frozen dataclass's per-field
    #: ``__init__`` (a third of parsing a status read): what the dialects build requests with.
    new_request = fast_constructor(Request)

#: Every field of a ``Request`` in declaration order, at its default (``_NO_VALUE`` for the
#: three without one): what ``route_request`` fills in.
_NO_VALUE: Any = object()
_REQUEST_DEFAULTS: dict[str, Any] = {
    f.name: _NO_VALUE if f.default is dataclasses.MISSING else f.default
    for f in dataclasses.fields(Request)
}
_new, _put = object.__new__, object.__setattr__


def route_request(kind: RequestKind, job_id: str | None, common: dict[str, Any]) -> Request:
    """``new_request(kind=kind, job_id=job_id, **common)``: the same request (field for field,
    in the same order), for a route that takes nothing else from the request (a status read, a
    download...), without passing every field by keyword. ``common`` as ``Dialect.parse``
    makes it; anything else it holds is handed to ``new_request``, which refuses what
    ``Request`` refuses."""
    values = _REQUEST_DEFAULTS.copy()
    values.update(common)
    if (
        len(values) != len(_REQUEST_DEFAULTS)  # a name Request has no field for
        or values["method"] is _NO_VALUE
        or values["path"] is _NO_VALUE
        or "kind" in common
        or "job_id" in common
    ):
        return new_request(kind=kind, job_id=job_id, **common)  # raises as Request does
    values["kind"] = kind
    values["job_id"] = job_id
    request: Request = _new(Request)
    _put(request, "__dict__", values)
    return request


class _Common(dict[str, Any]):
    """``common`` as ``Dialect.body_parser`` hands it to ``parse_route`` for every body of one
    request line and headers: the same fields, and (``submit``) every field of the submit
    request they make, in field order, at ``Request``'s defaults but for ``kind`` and
    ``common`` itself (None when ``common`` holds a name ``submit_request`` sets or ``Request``
    has no field for). ``submit_request`` makes a request of a copy of it."""

    __slots__ = ("submit",)

    def __init__(self, common: dict[str, Any]) -> None:
        super().__init__(common)
        values = _REQUEST_DEFAULTS.copy()
        values.update(common)
        self.submit: dict[str, Any] | None = None
        if (
            len(values) == len(_REQUEST_DEFAULTS)
            and values["method"] is not _NO_VALUE
            and values["path"] is not _NO_VALUE
            and _SUBMIT_SETS.isdisjoint(common)
        ):
            values["kind"] = "submit"
            values["job_id"] = None
            self.submit = values


#: The fields ``submit_request`` sets besides ``common``'s (and ``job_id``, always None).
_SUBMIT_SETS = frozenset({"kind", "job_id", "body", "callback_url", "hold"})


def submit_request(
    common: dict[str, Any],
    body: dict[str, Any] | None,
    callback_url: str | None = None,
    hold: float = 0.0,
) -> Request:
    """``new_request(kind="submit", body=body, callback_url=callback_url, hold=hold, **common)``:
    the same request (field for field, in the same order), made of a copy of the fields
    ``body_parser``'s ``common`` holds (``_Common``) when it is one, without passing every
    field by keyword."""
    values = common.submit if common.__class__ is _Common else None
    if values is None:
        return new_request(kind="submit", body=body, callback_url=callback_url, hold=hold, **common)
    request: Request = _new(Request)
    request.__dict__.update(values, body=body, callback_url=callback_url, hold=hold)
    return request


#: How deep a request body's JSON may nest (objects and arrays). Real bodies nest a few levels;
#: a deeper one is refused before it can exhaust the stack of whatever walks it later.
MAX_JSON_DEPTH = 64


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    kind: RequestKind
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.template))
        object.__setattr__(self, "pattern", re.compile(f"^{regex}$"))

    @property
    def static(self) -> bool:
        """Whether the template has no ``{param}``: its pattern matches only the template itself
        (and the template and a newline, as ``$`` does)."""
        return self.pattern.pattern == f"^{re.escape(self.template)}$"


#: A route and the parameters its pattern took from the path.
Match = tuple[Route, dict[str, str]]


def scan_routes(routes: Sequence[Route], method: str, path: str) -> Match | None:
    """The first of ``routes`` for ``method`` whose pattern matches ``path``: the rule."""
    for route in routes:
        if route.method != method:
            continue
        found = route.pattern.match(path)
        if found:
            return route, found.groupdict()
    return None


class RouteTable:
    """``routes`` compiled once, so that ``match`` finds what ``scan_routes`` finds without
    trying every route: the paths a route without parameters matches, looked up at once, and
    per method only the routes with parameters, in order.

    A path the lookup does not hold matches no route without parameters (each matches only
    its template, or its template and a newline), so trying the others in order gives the
    first match.
    """

    def __init__(self, routes: Sequence[Route]) -> None:
        self._exact: dict[tuple[str, str], Match] = {}
        by_method: dict[str, list[Route]] = {}
        for route in routes:
            if route.static:
                for path in (route.template, route.template + "\n"):
                    found = scan_routes(routes, route.method, path)
                    if found is not None:
                        self._exact.setdefault((route.method, path), found)
            else:
                by_method.setdefault(route.method, []).append(route)
        self._param = {method: tuple(found) for method, found in by_method.items()}
        #: The last paths matched to a route with parameters (a client polls one job's path
        #: again and again): at most ``_MATCHES_KEPT``, forgotten all at once when full.
        self._matched: dict[tuple[str, str], Match] = {}

    def match(self, method: str, path: str) -> Match | None:
        key = (method, path)
        hit = self._exact.get(key) or self._matched.get(key)
        if hit is not None:
            return hit[0], dict(hit[1])
        for route in self._param.get(method, ()):
            found = route.pattern.match(path)
            if found:
                params = found.groupdict()
                if len(path) <= _PATH_KEPT:
                    if len(self._matched) >= _MATCHES_KEPT:
                        self._matched.clear()
                    self._matched[key] = (route, params)
                    return route, dict(params)
                return route, params
        return None


_MATCHES_KEPT = 512
#: Jobs whose last status answer is kept at most (``keeps_status_answers``), and the largest
#: answer kept (an inline video is answered afresh each time).
_KEPT_JOBS = 512
_KEPT_BODY = 4096
#: Longer paths (no real job path is) are matched every time, never kept.
_PATH_KEPT = 256
#: Requests ``Dialect.parse`` remembers by the ``HttpRequest`` they were made of, at most.
_PARSED_KEPT = 512


class BadRequest(Exception):
    """A request the dialect refuses: raised while parsing, journaled by ``Dialect.parse``.

    The engine answers ``status`` with ``code`` and ``message``. The journaled request has the
    route's kind and job id unless ``kind`` or ``job_id`` say otherwise, and ``body`` when the
    body was read before it was refused.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        body: dict[str, Any] | None = None,
        job_id: str | None = None,
        kind: RequestKind | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.body = body
        self.job_id = job_id
        self.kind = kind

    def request(self, kind: RequestKind, job_id: str | None, common: dict[str, Any]) -> Request:
        """The engine request that carries this refusal (``kind``/``job_id`` are the route's)."""
        return new_request(
            kind=self.kind or kind,
            job_id=self.job_id if self.job_id is not None else job_id,
            body=self.body,
            problem=self.message,
            problem_status=self.status,
            problem_code=self.code,
            **common,
        )


def video_response(reply: Reply, headers: Sequence[tuple[str, str]] = ()) -> HttpResponse:
    """A job's video (the reply's content), with ``headers`` after the reply's own."""
    assert reply.content is not None
    return HttpResponse(200, reply.content, "video/mp4", (*reply.headers, *headers))


class Dialect:
    """Base class: routing, common parsing, and the generic error rendering."""

    name = "base"
    #: Said beside the name wherever dialects are listed (``serve --help``): a sunset API...
    note = ""
    routes: Sequence[Route] = ()
    #: Which answers tell clients when to poll again (a header or a body field), as the
    #: provider sends them on the wire: True for every answer about a job, False for none, or
    #: the request kinds (``{"status"}``) whose answers carry a hint. The journal records a
    #: hint only on those answers, so ``honours_poll_after`` judges only clients that were
    #: shown one. Never claim a hint the real provider does not send.
    poll_hints: bool | frozenset[str] = True

    #: Whether the provider accepts a create over the scenario's ``concurrency`` limit and
    #: holds it queued until a slot frees (Runway's ``THROTTLED``) instead of refusing it 429.
    queues_at_capacity: bool = False

    #: Set by a dialect whose answer to a status read (``render_answer``) depends on nothing but
    #: the job's view less its ``now``, the request's ``base_url``, the reply's status and
    #: headers, the dialect's settings and its ``status_input``: no time that passes, no query,
    #: no sequence number but what ``status_input`` stands for.
    #: Its last answer about each job is then kept (``_KEPT_JOBS`` jobs at most, answers of up
    #: to ``_KEPT_BODY`` bytes) and sent again while all of those are the very same objects:
    #: the engine's views of one job at one step share them. ``test_base`` checks every dialect
    #: that sets it against its answers made afresh.
    keeps_status_answers: bool = False

    #: The request headers (names in lower case) this dialect's class reads: everything it
    #: makes of a request (``parse``, ``body_parser``) and of a reply (``render`` and its
    #: renderers) depends on no other header. What the ASGI app keeps a request's lane by
    #: (``FakeProviderApp._lane``), with the method, path, query, peer and scheme, and all
    #: the headers the lane's ``HttpRequest`` holds: requests that differ only in headers the
    #: dialect never reads (a request id, a trace) share one. Read from the class's own
    #: namespace only: a subclass that does not declare its own is handed every header.
    #: ``tests/dialects/test_headers_read.py`` checks each dialect against what it reads.
    headers_read: frozenset[str] = frozenset(
        {
            "host",  # ``HttpRequest.base_url``: the links in answers
            "authorization",  # ``credential``
            "x-client-id",  # the journal's ``client``
            "idempotency-key",
            "content-type",  # ``read_json_object``, ``_common.read_multipart``
        }
    )

    def __init__(self, settings: RunSettings | None = None) -> None:
        #: What the fake shares with its dialect (``FakeProvider`` passes its own): the epoch,
        #: so that dialects can show timestamps (``created_at``...) as providers do, and the
        #: time scale, so that durations a request asks for run at the scenario's speed.
        self.settings = settings if settings is not None else RunSettings()
        #: By job id: the view's parts, base URL, status and headers, and the answer made.
        self._kept_answers: dict[str, tuple[Any, ...]] = {}
        #: By ``id(http)``: an ``HttpRequest`` without a body handed to ``parse`` and the
        #: request made of it (``parse`` is a function of the request and the dialect alone).
        self._parsed: dict[int, tuple[HttpRequest, Request]] = {}

    @property
    def epoch(self) -> float:
        """Unix time of clock reading 0: job times in a ``JobView`` are clock readings, and
        ``epoch + reading`` is Unix time."""
        return self.settings.epoch

    def inline_result(self, request: Request, job: JobView) -> bool:
        """Whether this dialect's answer to ``request``, showing ``job`` succeeded, carries the
        result itself (the video inline, as Google's operations do). Such an answer is journaled
        with ``inline_result`` and counts as a retrieval, as a content download does. By default
        no answer does: the result is fetched from a content route."""
        return False

    @functools.cached_property
    def route_table(self) -> RouteTable:
        """``routes`` compiled once per dialect (``match`` looks paths up in it)."""
        return RouteTable(self.routes)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The first route for ``method`` whose template matches ``path``, and its parameters."""
        return self.route_table.match(method, path)

    def allowed_methods(self, path: str) -> list[str]:
        return sorted({r.method for r in self.routes if r.pattern.match(path)})

    def new_job_id(self, seed: int, number: int) -> str:
        return default_job_id(seed, number)

    def parse(self, http: HttpRequest) -> Request:
        """The engine request for ``http`` (``kind='unknown'`` when no route matches).

        Parsing is a function of ``http`` and the dialect alone (its routes and settings), so
        the request made of an ``HttpRequest`` without a body is remembered for that very
        object: an adapter that hands the same object again for the same request (the ASGI
        app does, per connection and path) gets the same request, not parsed again. A
        request that carries a body (a submit's dict) is never shared. At most
        ``_PARSED_KEPT`` are kept, forgotten all at once when full.
        """
        known = self._parsed.get(id(http))
        if known is not None and known[0] is http:
            return known[1]
        request = self._parse(http)
        if request.body is None and not http.body and http.too_large is None:
            parsed = self._parsed
            if len(parsed) >= _PARSED_KEPT:
                parsed.clear()
            parsed[id(http)] = (http, request)  # holding ``http``: its id is not reused
        return request

    def _parse(self, http: HttpRequest) -> Request:
        """``parse``'s work, done afresh."""
        found = self.match(http.method, http.path)
        headers = http.headers
        common: dict[str, Any] = {
            "method": http.method,
            "path": http.path,
            "credential": self.credential(http),
            "client": client_of(headers.get("x-client-id"), http.peer),  # http.client
            "idempotency_key": headers.get("idempotency-key"),
        }
        if found is None:
            allowed = self.allowed_methods(http.path)
            if allowed:
                message = f"{http.method} is not allowed here; use {', '.join(allowed)}."
                refused = BadRequest(405, "method_not_allowed", message)
                return refused.request("unknown", None, common)
            return route_request("unknown", None, common)
        route, params = found
        try:
            if http.too_large is not None:
                message = f"Request bodies are limited to {http.too_large} bytes."
                raise BadRequest(413, "payload_too_large", message)
            return self.parse_route(route, params, http, common)
        except BadRequest as refused:
            return refused.request(route.kind, params.get("job_id"), common)

    def body_parser(self, http: HttpRequest) -> Callable[[HttpRequest], Request] | None:
        """What ``parse`` is for a request with the method, path, query, headers, peer and base
        URL of ``http`` and any body (or one too large): the route matched, the credential,
        client and idempotency key read once, so that an adapter that keeps it per request
        line and headers (the ASGI app) parses each body alone. None when no route matches
        (``parse`` answers those) or the dialect's class parses otherwise (overrides ``parse``
        or ``_parse``)."""
        cls = type(self)
        if cls.parse is not Dialect.parse or cls._parse is not Dialect._parse:
            return None
        found = self.match(http.method, http.path)
        if found is None:
            return None
        route, params = found
        headers = http.headers
        common = _Common(  # as _parse makes it (no dialect changes it)
            {
                "method": http.method,
                "path": http.path,
                "credential": self.credential(http),
                "client": client_of(headers.get("x-client-id"), http.peer),
                "idempotency_key": headers.get("idempotency-key"),
            }
        )
        kind, job_id, parse_route = route.kind, params.get("job_id"), self.parse_route

        def parse(with_body: HttpRequest) -> Request:
            try:
                if with_body.too_large is not None:
                    message = f"Request bodies are limited to {with_body.too_large} bytes."
                    raise BadRequest(413, "payload_too_large", message)
                return parse_route(route, dict(params), with_body, common)
            except BadRequest as refused:
                return refused.request(kind, job_id, common)

        return parse

    def credential(self, http: HttpRequest) -> str | None:
        """The request's credential: ``http.bearer`` unless the provider says otherwise."""
        scheme, _, token = http.headers.get("authorization", "").partition(" ")  # http.bearer
        return token.strip() or None if scheme.lower() == "bearer" else None

    def parse_route(
        self, route: Route, params: dict[str, str], http: HttpRequest, common: dict[str, Any]
    ) -> Request:
        """The engine request for a matched route; raise ``BadRequest`` to refuse it."""
        raise NotImplementedError

    #: Set by providers that answer a cancel of a job that had already ended as a success
    #: (deleting the job, or ignoring the late cancel): the answer is their ordinary cancel answer.
    late_cancel_succeeds = False

    def render(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        """The wire answer: a scripted fault's, a refusal's, or ``render_answer``'s."""
        fault = reply.fault
        if fault is not None and fault.status is not None:  # reply.scripted
            return self.render_scripted(reply)
        if reply.error is not None:
            return self.render_refusal(reply, http)
        if self.keeps_status_answers and reply.request.kind == "status":
            return self._status_answer(reply, http)
        return self.render_answer(reply, http)

    def renderer(self, kind: RequestKind) -> Callable[[Reply, HttpRequest], HttpResponse]:
        """What ``render`` is for a reply to a request of ``kind`` that neither a fault nor a
        refusal touches (``reply.fault`` and ``reply.error`` None): the step it comes to, so
        that an adapter keeping a parsed request (the ASGI app) calls it straight away. A
        dialect whose class renders otherwise (overrides ``render``) gets ``render`` itself."""
        if type(self).render is not Dialect.render:
            return self.render
        if kind == "status" and self.keeps_status_answers:
            return self._status_answer
        return self.render_answer

    def _status_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        """``render_answer(reply, http)`` for a status read: the answer kept for the job when
        everything it was made from is the same (see ``keeps_status_answers``)."""
        job = reply.job
        if job is None:
            return self.render_answer(reply, http)
        kept = self._kept_answers.get(job.id)
        if (
            kept is not None
            and kept[0] is job.spec_index
            and kept[1] is job.status
            and kept[2] is job.progress
            and kept[3] is job.created_at
            and kept[4] is job.status_since
            and kept[5] is job.poll_after
            and kept[6] is job.estimated_duration
            and kept[7] is job.message
            and kept[8] is job.request
            and kept[9] is job.result
            and kept[10] is job.error
            and kept[11] is job.summary
            and kept[12] is job.callback_url
            and kept[13] is job.throttled
            and kept[14] is reply.headers
            and kept[15] == reply.status_code
            and kept[16] == http.base_url
            and kept[17] is self.status_input(reply, http)
        ):
            answer: HttpResponse = kept[18]
            return answer
        response = self.render_answer(reply, http)
        if len(response.body) <= _KEPT_BODY:
            if len(self._kept_answers) >= _KEPT_JOBS:
                self._kept_answers.clear()
            self._kept_answers[job.id] = (
                job.spec_index,
                job.status,
                job.progress,
                job.created_at,
                job.status_since,
                job.poll_after,
                job.estimated_duration,
                job.message,
                job.request,
                job.result,
                job.error,
                job.summary,
                job.callback_url,
                job.throttled,
                reply.headers,
                reply.status_code,
                http.base_url,
                self.status_input(reply, http),
                response,
            )
        return response

    def status_input(self, reply: Reply, http: HttpRequest) -> object:
        """What else a status answer depends on, for a dialect that ``keeps_status_answers``:
        an object that is the very same one (``is``) whenever that is the same. None here."""
        return None

    def render_refusal(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        """An engine refusal (``reply.error`` is set): the dialect's error shape by default."""
        assert reply.error is not None
        if self.late_cancel_succeeds and cancel_after_end(reply):
            return self.render_answer(reply, http)
        return self.render_error(reply.status_code, reply.error, reply.headers)

    def render_answer(self, reply: Reply, http: HttpRequest) -> HttpResponse:
        """The answer to a request the engine handled (``reply.job`` set but for lists)."""
        raise NotImplementedError

    def render_error(
        self, status: int, error: ApiError, headers: Sequence[tuple[str, str]] = ()
    ) -> HttpResponse:
        return error_response(status, error.code, error.message, headers)

    # -- webhooks -------------------------------------------------------------------------

    #: Whether the provider signs its webhooks. When it does not, a scenario's ``forged:`` and
    #: ``stale:`` send nothing in this dialect (there is no signature to get wrong).
    webhook_signed = True

    def webhook_event(self, event: str, job: JobView) -> str | None:
        """The provider's name for the engine event ``event`` (``job.succeeded``...) announcing
        that ``job`` changed state; None when the provider sends no webhook for it.

        Planning drops events answered None, so they are neither sent nor journalled; every
        send that is made is journalled with the engine's ``event``, whatever the dialect.
        By default every event is sent under its engine name (the generic shape).
        """
        return event

    def webhook_message(self, send: Outgoing) -> WebhookMessage:
        """Body and headers of one send, as the provider would shape them.

        Every send of one message must have the same body (duplicates and retries are
        byte-identical); only the signature headers may change. A provider without webhooks of
        its own sends the generic shape (``generic.generic_webhook_message``).
        """
        raise NotImplementedError

    def webhook_request(self, base_url: str) -> HttpRequest:
        """A stand-in request for rendering a job into a webhook body with the GET renderers
        (which take the base URL for links from the request)."""
        return HttpRequest(method="GET", path="/", base_url=base_url)

    def render_scripted(self, reply: Reply) -> HttpResponse:
        """A fault's answer: its body verbatim, else the dialect's error shape."""
        fault = reply.fault
        assert fault is not None
        if fault.body is None:
            error = reply.error or ApiError(f"http_{reply.status_code}", "Scripted fault.")
            if reply.status_code < 400:
                return json_response(reply.status_code, {}, reply.headers)
            return self.render_error(reply.status_code, error, reply.headers)
        if isinstance(fault.body, str):
            return HttpResponse(
                reply.status_code, fault.body.encode(), "text/plain; charset=utf-8", reply.headers
            )
        return json_response(reply.status_code, fault.body, reply.headers)


def read_json_object(http: HttpRequest) -> dict[str, Any]:
    """The body as a JSON object; ``BadRequest`` (415 or 400) saying why it is not one."""
    given = http.headers.get("content-type", "")
    if given not in _JSON_TYPES:
        ctype = given.split(";")[0].strip().lower()
        if ctype != "application/json" and not ctype.endswith("+json"):
            shown = ctype or "none"
            raise BadRequest(
                415, "unsupported_media_type", f"Send the body as application/json (got {shown})."
            )
        if len(_JSON_TYPES) < _JSON_TYPES_KEPT:
            _JSON_TYPES.add(given)
    body = http.body or b"null"
    if body[0] == 0x7B and _DECODE is not None:
        # an object: msgspec reads what json.loads reads (below) as json.loads reads it, or
        # refuses it (a number out of float's range, NaN, an escaped lone surrogate, text
        # that is no UTF-8...), and then json.loads reads or refuses it as it always did
        try:
            data = _DECODE(body)
        except Exception:  # msgspec.DecodeError, or a RecursionError
            pass
        else:
            if not (
                _plain_object(data)
                or (
                    body.isascii()
                    and b"\\u" not in body
                    and body.count(b"{") + body.count(b"[") <= MAX_JSON_DEPTH
                )
            ):
                # else nothing check_body refuses can be in it: an object of ASCII names and
                # ASCII text or numbers (most creates: the values' classes and flags are
                # looked at, where counting a long prompt's brackets read every byte twice),
                # or ASCII text without escapes, which holds no lone surrogate, and so few
                # brackets that they nest no deeper than allowed
                check_body(data)
            return data  # type: ignore[no-any-return]
    try:
        if body[0] == 0x7B and body[1:2] != b"\x00":
            # an object: what json.loads finds its encoding to be (UTF-8; the BOMs and UTF-16
            # and UTF-32 start otherwise), decoded as it decodes, without asking
            text = body.decode("utf-8", "surrogatepass")
            try:
                # json.loads(text) when the object is the whole text (no whitespace before it:
                # it opens with the brace): its scanner, without the three calls around it
                data, end = _SCAN(text, 0)
            except (StopIteration, ValueError):
                end = -1
            if end != len(text):  # more after it, or no object: json.loads says what
                data = json.loads(text)
        else:
            data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(400, "invalid_json", f"The body is not valid JSON: {exc}.") from None
    except RecursionError:
        raise BadRequest(400, "invalid_json", _TOO_DEEP) from None
    if not isinstance(data, dict):
        raise BadRequest(400, "invalid_json", "The body must be a JSON object.")
    check_body(data)
    return data


_TOO_DEEP = f"The body nests deeper than {MAX_JSON_DEPTH} levels."
#: ``Content-Type`` values (as sent) ``read_json_object`` has found to be JSON, at most
#: ``_JSON_TYPES_KEPT`` of them (the others are read every time).
_JSON_TYPES: set[str] = set()
_JSON_TYPES_KEPT = 64


def _json_decoder() -> Callable[[bytes], Any] | None:
    """msgspec's JSON decoder (to Python's dicts, lists, strings and numbers), or None where
    msgspec is not installed."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - installed wherever it builds
        return None
    decode: Callable[[bytes], Any] = msgspec.json.Decoder().decode
    return decode


_DECODE = _json_decoder()
#: What ``json.loads`` scans a text with (the default decoder's scanner).
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
#: Values that hold no text and nest nothing: nothing in them ``check_body`` could refuse.
_PLAIN = frozenset({int, float, bool, type(None)})


def check_body(data: Any) -> None:
    """Refuse (``BadRequest`` 400 ``invalid_json``) a parsed body that nests deeper than
    ``MAX_JSON_DEPTH`` or holds a lone surrogate (``"\\ud800"`` is valid JSON syntax but no
    Unicode text: it could be neither journaled nor echoed back as UTF-8). Iterative, so a
    deep body cannot exhaust the stack here."""
    if not _plain_object(data):
        walk_body(data)


def _plain_object(data: Any) -> bool:
    """Whether ``data`` is a flat object of ASCII names and ASCII text or numbers (most
    creates): nothing ``check_body`` refuses, found without its walk (``str.isascii`` reads a
    flag, not the text)."""
    if data.__class__ is not dict:
        return False
    for key, value in data.items():
        if key.__class__ is not str or not key.isascii():
            return False
        if value.__class__ is str:
            if not value.isascii():
                return False
        elif value.__class__ not in _PLAIN:
            return False
    return True


def walk_body(data: Any) -> None:
    """``check_body``'s rule, by walking every value of ``data``."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value)
        elif isinstance(value, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise BadRequest(400, "invalid_json", _TOO_DEEP)
            if isinstance(value, dict):
                for key, item in value.items():
                    _check_text(str(key))
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in value)


def _check_text(text: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise BadRequest(
            400,
            "invalid_json",
            f"The body holds a lone surrogate (U+{ord(bad):04X}); send valid Unicode text.",
        ) from None


def cancel_after_end(reply: Reply) -> bool:
    """Whether ``reply`` refuses a cancel because the job had already ended."""
    return (
        reply.request.kind == "cancel"
        and reply.error is not None
        and reply.error.code == "job_already_terminal"
    )
