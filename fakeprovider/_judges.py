"""The client invariants judged as one client's entries of a run stream by (pure).

``_rules`` states each invariant as a function of a client's whole list of entries; here one
``ClientJudge`` is fed the same entries one at a time, in the same (seq) order, and judges
every rule at once: it looks an entry's job up once, and each rule keeps in that job's record
(``_Job``) only what it still needs, a few numbers and strings that do not grow with the
number of entries of the job (a job read a million times costs what a job read twice does);
per request body, per credential and per Retry-After scope it keeps as little, plus the
violations found. ``close`` returns the violations rule by rule, each rule's in the order its
function yields them, so ``check`` gives the same report whichever way it judges.
``tests/test_judges.py`` holds each rule's verdict here to its rule function on generated
journals (``JUDGES`` gives a judge of one rule for that).

Where a later entry can change a verdict (a webhook, which the journal lists after the
requests, a list answer naming a job the client only asks about later, a submit seen after
reads of its job), the judge keeps the candidates and decides at ``close``.
"""

from __future__ import annotations

import array
import bisect
import heapq
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias, get_args

from ._rules import (
    _DATE_FORMS,
    CLIENT_RULES,
    EPSILON,
    SUCCESS_STATUSES,
    Violation,
    _answer,
    _answer_of,
    _got,
    _headers_at,
    _scope,
    _scope_key,
    _scope_kind,
    _scope_of,
    describe,
    fmt_time,
    told,
)
from .entries import Entry, EntryLike, as_entry
from .scenario import TERMINAL_STATUSES, Status

if TYPE_CHECKING:
    from .limits import Limits

__all__ = [
    "JUDGES",
    "BoundedStatusRate",
    "ClientJudge",
    "Found",
    "Held",
    "Judge",
    "Unjudgeable",
    "found_as_is",
    "hooks_of",
    "violation",
]

#: The run's webhook deliveries that told (``told``) by job id, each as its ``received_at`` and
#: ``event``, in file order (what ``_judge`` hands every client at ``close``: ``hooks_of``).
Hooks = Mapping[str, Sequence[tuple[float, str | None]]]

_INF = math.inf
_NEG_INF = -math.inf  # (one float: ``-math.inf`` makes one each time)
_bisect_left = bisect.bisect_left
_heappop = heapq.heappop
_heappush = heapq.heappush


def hooks_of(webhooks: Iterable[EntryLike]) -> dict[str, list[tuple[float, str | None]]]:
    """The ``Hooks`` of a run's ``webhooks`` (webhook entries in file order)."""
    out: dict[str, list[tuple[float, str | None]]] = {}
    for w in webhooks:
        if w.job_id is not None and told(w):
            out.setdefault(w.job_id, []).append((w.received_at, w.event))
    return out


#: An empty container of a judge until its first use (shared, and read-only so that a use
#: that forgot to make its own fails at once instead of writing into every judge's).
_NO_DICT: Any = MappingProxyType({})
_NO_LIST: Any = ()
#: One string of each job status the fake writes: what a judge keeps of a status (in a job's
#: record, ``observed``) is this one, not the copy each journal line decodes to (a job's record
#: would keep one or two of those for good).
_STATUSES: dict[str | None, str | None] = {status: status for status in get_args(Status)}
_status_of = _STATUSES.get
_NO_STATUSES: frozenset[str] = frozenset()
#: ``observed | {status}`` by both (at most ``_OBSERVED_MAX`` of them): the judges of clients
#: that saw the same statuses share one frozenset.
_OBSERVED: dict[tuple[frozenset[str], str], frozenset[str]] = {}
_OBSERVED_MAX = 4096


def _observe(observed: frozenset[str], status: str) -> frozenset[str]:
    """``observed`` with ``status``, as the one frozenset of those statuses judges share."""
    key = (observed, status)
    both = _OBSERVED.get(key)
    if both is None:
        both = observed | {status}
        if len(_OBSERVED) < _OBSERVED_MAX:
            _OBSERVED[key] = both
    return both


#: What a judge keeps of an answer it holds past its entry (a failed status read or content
#: fetch, which the gave-up warning and ``no_resubmission`` may name later; a Retry-After
#: source, until the next request in its scope): what their messages name, not the entry (whose
#: every field a job would keep for as long): seq, kind, job id, status code, ``dropped``,
#: true status, the Retry-After's ``raw`` and ``not_before``, error code.
Held = tuple[
    int,
    str,
    "str | None",
    "int | None",
    "str | None",
    "str | None",
    "str | None",
    "float | None",
    "str | None",
]


def _held_of(e: EntryLike, kind: str, job_id: str | None) -> Held:
    """What a judge keeps of ``e`` (of ``kind``, about ``job_id``: the judge's own strings)."""
    true_status = e.true_status
    record = e.retry_after
    return (
        e.seq,
        kind,
        job_id,
        e.status_code,
        e.dropped,
        _status_of(true_status, true_status),
        None if record is None else record.raw,
        None if record is None else record.not_before,
        e.error_code,
    )


_NAMES = {
    "submit": "submit",
    "status": "status read",
    "content": "content fetch",
    "cancel": "cancel",
    "list": "list",
    "webhook": "webhook delivery",
}


#: One string of each kind the judges name in what they keep (``Held``).
_KINDS = {kind: kind for kind in _NAMES}


def _describe(kind: str, seq: int, job_id: str | None) -> str:
    """``_rules.describe`` of an entry kept as its kind, seq and job."""
    name = _NAMES.get(kind, "request")
    if kind in ("submit", "list") or job_id is None:
        return f"{name} #{seq}"
    return f"{name} #{seq} for job {job_id}"


class Judge:
    """Rules over one client's entries: ``add`` each in order, then ``close`` once."""

    __slots__ = ()

    def add(self, e: EntryLike) -> None:
        raise NotImplementedError

    def close(self, hooks: Hooks) -> list[Violation]:
        raise NotImplementedError


class _Job:
    """What the rules keep about one job of one client (see each rule's part of
    ``ClientJudge.add``); kept small: numbers, strings and the violations found."""

    __slots__ = (
        "br_content",
        "br_status",
        "dl_found",
        "dl_limit",
        "dl_maxima",
        "dl_received",
        "dl_seq",
        "dl_submitted",
        "end",
        "ended",
        "fl_content",
        "fl_status",
        "job_id",
        "last",
        "last_rank",
        "ov_found",
        "ov_negated",
        "ov_reads",
        "own",
        "pa_found",
        "pa_hint",
        "pa_seen",
        "pa_seq",
        "pr_candidates",
        "pr_last_seq",
        "pr_last_status",
        "pr_pending_seq",
        "pr_pending_status",
        "pr_pending_success",
        "pr_success",
        "rs_ended",
        "rs_old_ended",
        "rs_old_read",
        "rs_read",
        "rs_seq",
        "seen_at",
        "shown",
        "sr_count",
        "sr_extra",
        "sr_fetched",
        "sr_saw",
        "st_at",
        "st_found",
        "st_found_at",
        "st_seq",
        "st_status",
    )

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.own = False  # an entry of the client names it (``_with_listed``'s known jobs)
        # the seq of the client's last entry that names it (-1: none; the stream's ``ends``)
        self.end = -1
        self.shown = False  # an entry showed it (its own, or a list answer)
        # bounded_retries: the groups of its status reads and of its content fetches
        # (``_Group``), each as ``ClientJudge.br_groups`` holds one (``_NEW`` until its first)
        self.br_status: Any = _NEW
        self.br_content: Any = _NEW
        # no_overlap: the earlier reads that could still be pending at a later read, a stack
        # of suffix maxima of their response starts (negated), with each read's seq and time
        # (two items a read: no tuple each); while only one read is kept (the job's first, or
        # each read of a job read in order, which lets the one before go), that read's negated
        # start as a float and its seq and time as a pair (no list: the lists from the first
        # read that finds two still kept)
        self.ov_negated: Any = None  # list[float] | float | None
        self.ov_reads: Any = None  # list[int | float] | tuple[int, float] | None
        self.ov_found: list[Any] | None = (
            None  # per overlap: seq, prev_seq, received, prev_received
        )
        # single_retrieval: the first retrievals (as many as the limits look at), how many,
        # the violation of the first one too many, the first entry that showed success
        self.sr_fetched: list[Any] | None = None  # seq and received, two items each
        self.sr_count = 0
        self.sr_extra: Violation | None = None
        self.sr_saw: tuple[int, float, str, str] | None = None  # seq, seen, status, client
        # no_premature_retrieval: over the entries before the current seq, the earliest
        # success shown and the last status shown; the current seq's; the fetches premature
        # by the entries, each received before all earlier ones (a webhook may excuse them)
        self.pr_success = _INF
        self.pr_last_seq: int | None = None
        self.pr_last_status: str | None = None
        self.pr_pending_seq: int | None = None
        self.pr_pending_success = _INF
        self.pr_pending_status: str | None = None
        self.pr_candidates: list[tuple[float, Violation]] | None = None
        # honours_poll_after: the last submit or status read (seq, when it was seen, its hint
        # when the next poll is held to it), the polls too soon, each with the interval in
        # which a webhook would have prompted it
        self.pa_seq: int | None = None
        self.pa_seen = _INF
        self.pa_hint: float | None = None
        # per poll: answered, received, hint, prev_seq, seq
        self.pa_found: list[Any] | None = None
        # stops_at_terminal: the entry that first showed the job ended (so far), and the
        # first status read after it
        self.st_seq: int | None = None
        self.st_status: str | None = None
        self.st_at = _INF
        self.st_found: int | None = None  # that read's seq (the rest is as it was then)
        self.st_found_at = 0.0  # and when it was received
        # no_resubmission: the earliest moment an answer showed the client the job ended, and
        # the last status read when it failed; a submit is held to the entries of the seqs
        # before its own, so the seq of the latest entry that told, and both as they were
        # before that seq (that read let go once a later seq holds one: ``ClientJudge._held``)
        self.rs_ended = _INF
        self.rs_read: Held | None = None
        self.rs_seq: int | None = None
        self.rs_old_ended = _INF
        self.rs_old_read: Held | None = None
        # for the stream (``_stream``): when an answer first showed the client the job ended
        # (job ids that are not empty), whether one did, the job's last entry (list answers
        # included) when it was a failed status read or content fetch, and the rank of the
        # job's first such entry among the client's jobs (-1: none yet)
        self.seen_at: float | None = None
        self.ended = False
        # whether the last status read (``fl_status``) and the last content fetch
        # (``fl_content``) of the job failed, None until one did: the ``failed_last`` of its
        # two groups of those (``ClientJudge``), kept with the job rather than by a key each
        self.fl_status: bool | None = None
        self.fl_content: bool | None = None
        self.last: Held | None = None
        self.last_rank = -1
        # deadline: the start (the first submit, or the first entry until one comes), and
        # until a submit comes, the entries received later than all before them
        self.dl_seq = 0
        self.dl_received = 0.0
        self.dl_submitted = False
        self.dl_limit = _INF  # dl_received + deadline + slack + EPSILON
        self.dl_maxima: list[tuple[float, int, str, str]] | None = (
            None  # received, seq, kind, client
        )
        self.dl_found: Violation | None = None


class ClientJudge(Judge):
    """Every per-client rule over one client's entries of one run, fed in order; with
    ``bounded``, ``status_rate`` by ``BoundedStatusRate`` (which may raise ``Unjudgeable``),
    keeping up to ``keep_gone`` (0: ``KEEP_GONE``) of the reads it lets go.

    ``add`` looks the entry's job up once and runs each rule's part in turn; what each rule
    keeps per job is in ``_Job``, and per client here:

    - ``bounded_retries``: per job and route (submits: per request body), the seqs of the
      current run of failed attempts (at most ``max_retries`` + 1) until the rule is broken.
    - ``honours_retry_after``: per Retry-After scope, the answers with a Retry-After still
      waiting for the first later request in their scope sent after their headers arrived (a
      heap by that moment).
    - ``no_resubmission``: the current seq's entries that tell (an answer showing a job ended,
      a status read); per request body, its last submit and the jobs it made that the client
      has not yet seen end, each with the first submit that made it and the first one under
      another Idempotency-Key or credential.
    - ``no_retry_on_auth_error``: per credential, the 401/403 answers still waiting for a later
      request with it sent after their headers arrived (a heap by that moment), until the
      earliest one is retried.
    """

    __slots__ = (
        "allowed",
        "any_failed",
        "au_pending",
        "au_retried",
        "br_found",
        "br_groups",
        "client",
        "codes",
        "count",
        "date_slack",
        "deadline",
        "dropped",
        "entry_list",
        "failed_last",
        "faults",
        "forms",
        "found_jobs",
        "jobs",
        "keep",
        "keep_gone",
        "limits",
        "max_retries",
        "observed",
        "poll_tolerance",
        "ra_found",
        "ra_kinds",
        "ra_pending",
        "ra_scope",
        "ranked",
        "rate_limit_hits",
        "rates",
        "rates_first",
        "rates_seq",
        "retries",
        "rs_found",
        "rs_held",
        "rs_last",
        "rs_open",
        "seen_count",
        "seen_list",
        "shown_list",
        "slack",
        "status_list",
        "status_reads",
        "wanted",
    )

    def __init__(
        self,
        limits: Limits,
        bounded: bool = False,
        keep_gone: int = 0,
        codes: dict[int, int] | None = None,
    ) -> None:
        # (``bounded`` and the rest may come by position: ``_stream`` makes a judge a client
        # so, where keywords would cost a dict, made and unpacked, each)
        self.limits = limits
        self.count = 0  # entries added so far (their index)
        self.client = ""  # whose entries (the first's client)
        self.jobs: dict[str, _Job] = {}
        # each rule's jobs in the order the rule function meets them (``entry_jobs`` and the
        # rest): None while the judge has one job at most (each list is then that job or
        # none, as its flag says: ``_listed``), lists from its second job on (a client of one
        # job, most of a run of many clients, makes no list)
        self.entry_list: list[_Job] | None = None  # by their first own entry
        self.shown_list: list[_Job] | None = None  # by the first entry that showed them
        self.status_list: list[_Job] | None = None  # by their first status read
        self.allowed = 1 if limits.retrievals is None else limits.retrievals
        self.keep = max(self.allowed, limits.retrievals or 0)
        self.wanted = limits.retrievals
        self.max_retries = limits.max_retries
        self.poll_tolerance = limits.poll_tolerance
        self.deadline = limits.deadline
        self.slack = limits.deadline_slack
        # bounded_retries: each group of attempts (``_Group``: a job's status reads and content
        # fetches are kept by the job, ``_Job.br_status`` and ``br_content``) as the index of
        # its first entry while none failed since its last success, that index and the seqs
        # of the failures since as a list, or None once reported
        self.br_groups: dict[_Group, list[int] | int | None] = {}
        # (the containers marked ``_NO_DICT`` or ``_NO_LIST`` are made on first use: a run
        # of many clients makes as many judges, and most never need them)
        # each violation with the index of its group's first entry (the rule function's
        # order of groups: ``close_rules``)
        self.br_found: list[tuple[int, Violation]] = _NO_LIST
        self.ra_kinds: list[str] = _NO_LIST  # the scope kinds of the sources so far
        # scope group -> heap of (headers at, index, the earliest moment a request is not too
        # early: its not_before less the slack of its form, source), or one of them as itself
        # (a group of one source, as most are: no list each)
        self.ra_pending: dict[tuple[object, ...], Any] = _NO_DICT
        self.ra_scope = limits.retry_after_scope
        self.date_slack = limits.date_slack
        self.ra_found: list[tuple[int, Violation]] = _NO_LIST
        # request body -> its last submit, when it failed under an Idempotency-Key
        self.rs_last: dict[str | None, EntryLike] = _NO_DICT
        # request body -> job -> the submits that made it: (seq, Idempotency-Key, credential);
        # one job as the pair of its id and those, one request body as the pair of it and its
        # jobs (``_submitted``)
        self.rs_open: Any = _NO_DICT
        self.rs_found: list[Found] = _NO_LIST
        self.rs_held: _Job | None = None  # the job that last kept a failed read as its old one
        # credential -> heap of (headers at, index, seq, kind, job, status code), or one of
        # them as itself
        self.au_pending: dict[str | None, Any] = _NO_DICT
        # credential -> (index of the earliest refusal retried, it, the retry)
        self.au_retried: dict[
            str | None, tuple[int, tuple[float, int, int, str, str | None, int], EntryLike]
        ] = _NO_DICT
        # status_rate's judge, made at the client's first status read (None until then, and
        # for good when no budget is set); how many reads let go it keeps (-1: all of them)
        self.rates: Judge | None = None
        self.rates_first: float | None = None  # (``_rates``)
        self.rates_seq = 0
        self.keep_gone = (keep_gone or KEEP_GONE) if bounded else -1
        # what ``_stream`` counts for the metrics and coverage: the entries are ``count``
        self.status_reads = 0
        self.rate_limit_hits = 0
        self.retries = 0
        # per (kind, request body or job) once one of its entries failed: whether the last did
        # (a job's status reads and content fetches: its ``fl_status`` and ``fl_content``)
        self.failed_last: dict[tuple[str, str | None], bool] = _NO_DICT
        # whether any of its entries failed (only then can a job's ``last`` be a failed read:
        # ``_stream`` looks for the jobs given up on)
        self.any_failed = False
        # (``codes``: a dict the caller sums every judge's in, shared: ``_stream``'s, which
        # then needs no sum of its own at each client's close; else the judge's own)
        self.codes: dict[int, int] = {} if codes is None else codes
        self.forms: dict[str, int] = _NO_DICT
        self.faults: dict[str, int] = _NO_DICT
        self.dropped = 0
        # the job statuses its answers showed (one frozenset for every judge that saw the same)
        self.observed: frozenset[str] = _NO_STATUSES
        # by the first answer that showed them ended (``seen_jobs``), and how many
        self.seen_list: list[_Job] | None = None
        self.seen_count = 0
        self.ranked = 0  # the jobs with a ``last_rank``
        # whether a job's part holds a violation or a candidate (``ov_found``, ``pa_found``,
        # ``pr_candidates``, ``st_found``, ``dl_found``, ``sr_extra``): set when one is first
        # kept, never reset; while False ``iter_found`` skips the rules' loops over the jobs
        self.found_jobs = False

    def _listed(self) -> None:
        """Make the judge's job lists, as its second job is about to be made: each holds the
        first job if its flag says the job was met as that list's are (what each list's part
        of ``add`` appends a job at, once the lists are made)."""
        (job,) = self.jobs.values()
        self.entry_list = [job] if job.own else []
        self.shown_list = [job] if job.shown else []
        self.status_list = [job] if job.ov_negated is not None else []
        self.seen_list = [job] if job.seen_at is not None else []

    @property
    def entry_jobs(self) -> list[_Job]:
        """The jobs of the client's entries, by their first own entry."""
        listed = self.entry_list
        if listed is not None:
            return listed
        return [job for job in self.jobs.values() if job.own]  # (one at most)

    @property
    def shown_jobs(self) -> list[_Job]:
        """The jobs entries showed (their own, or listed), by the first entry that did."""
        listed = self.shown_list
        if listed is not None:
            return listed
        return [job for job in self.jobs.values() if job.shown]  # (one at most)

    @property
    def status_jobs(self) -> list[_Job]:
        """The jobs the client read the status of, by their first status read."""
        listed = self.status_list
        if listed is not None:
            return listed
        return [job for job in self.jobs.values() if job.ov_negated is not None]

    @property
    def seen_jobs(self) -> list[_Job]:
        """The jobs an answer showed the client had ended (``seen_at``), by the first that
        did (``seen_count`` of them)."""
        listed = self.seen_list
        if listed is not None:
            return listed
        return [job for job in self.jobs.values() if job.seen_at is not None]

    def extend(self, entries: Iterable[EntryLike]) -> None:
        for e in entries:
            self.add(e)

    def add(self, e: EntryLike) -> None:
        """Judge ``e``, the client's next entry: a status read of a job (most entries of
        most journals) by ``add``'s own lane, exactly what ``_add`` does for one without
        the parts of the other kinds; any other entry by ``_add``."""
        job_id = e.job_id
        kind = e.kind
        if kind != "status" or job_id is None:
            if job_id is not None:
                if kind == "submit":
                    self._submit(e, job_id)
                    return
                if kind == "content":
                    self._content(e, job_id)
                    return
            self._add(e)
            return
        index = self.count
        self.count = index + 1
        if not index:
            self.client = e.client
        seq = e.seq
        received = e.received_at
        status = e.job_status
        status = _status_of(status, status)
        code = e.status_code
        completed = e.completed_at
        seen = _INF if completed is None else completed
        dropped = e.dropped
        record = e.retry_after

        # what the metrics and coverage count (``_stream``), and ``EntryLike.failed``
        if dropped is None and code is not None and code < 500 and code != 429:
            failed = False
            ok = 200 <= code < 300
            codes = self.codes
            codes[code] = codes.get(code, 0) + 1
        else:
            failed = True
            ok = False
            self.any_failed = True
            if code is not None:
                codes = self.codes
                codes[code] = codes.get(code, 0) + 1
                if code == 429:
                    self.rate_limit_hits += 1
            if dropped is not None or code is None:
                self.dropped += 1
        if record is not None:
            forms = self.forms
            if forms is _NO_DICT:
                self.forms = forms = {}
            forms[record.form] = forms.get(record.form, 0) + 1
        fault = e.fault
        if fault:
            faults = self.faults
            if faults is _NO_DICT:
                self.faults = faults = {}
            faults[fault] = faults.get(fault, 0) + 1
        if status and status not in self.observed:
            self.observed = _observe(self.observed, status)
        terminal = status in TERMINAL_STATUSES

        jobs = self.jobs
        job = jobs.get(job_id)
        if job is None:
            if jobs and self.entry_list is None:
                self._listed()
            jobs[job_id] = job = _Job(job_id)
        job.end = seq
        started = False
        if not job.own:
            job.own = True
            in_order = self.entry_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)
            started = True

        # single_retrieval and no_premature_retrieval (``_shown`` for a status read)
        if not job.shown:
            job.shown = True
            in_order = self.shown_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)
        if job.sr_saw is None and status in SUCCESS_STATUSES:
            job.sr_saw = (seq, seen, status, self.client)
        if ok and e.inline_result is True:
            self._retrieved(e, job)
        if job.pr_pending_seq != seq:
            if job.pr_pending_success < job.pr_success:
                job.pr_success = job.pr_pending_success
            if job.pr_pending_status is not None:
                job.pr_last_status, job.pr_last_seq = job.pr_pending_status, job.pr_pending_seq
            job.pr_pending_success, job.pr_pending_status = _INF, None
            job.pr_pending_seq = seq
        if status is not None:
            job.pr_pending_status = status
            if status in SUCCESS_STATUSES and seen < job.pr_pending_success:
                job.pr_pending_success = seen
        # the stream's gave-up warning, and no_resubmission's news
        if job.last_rank < 0:
            job.last_rank = self.ranked
            self.ranked += 1
        if failed:
            true_status = e.true_status
            held: Held | None = (
                seq,
                "status",
                job.job_id,
                code,
                dropped,
                _status_of(true_status, true_status),
                None if record is None else record.raw,
                None if record is None else record.not_before,
                e.error_code,
            )
        else:
            held = None
        job.last = held
        if terminal:
            job.ended = True
            if job_id and completed is not None and job.seen_at is None:
                job.seen_at = completed
                self.seen_count += 1
                in_order = self.seen_list  # (None: the judge's one job, if any)
                if in_order is not None:
                    in_order.append(job)
        if terminal or failed or job.rs_read is not None:
            if job.rs_seq != seq:
                job.rs_seq = seq
                job.rs_old_ended = job.rs_ended
                old = job.rs_old_read = job.rs_read
                if old is not None:  # (``_held``)
                    holder = self.rs_held
                    if holder is not job:
                        if holder is not None and holder.rs_seq != seq:
                            holder.rs_old_read = None
                        self.rs_held = job
            if terminal and seen < job.rs_ended:
                job.rs_ended = seen
            job.rs_read = held

        # bounded_retries, and the retries the metrics count (the job's group of status
        # reads: an int while none failed since its last success, which a successful read
        # does not change; None once reported)
        last_failed = job.fl_status
        if last_failed is not None or failed:
            if last_failed:
                self.retries += 1
            job.fl_status = failed
        unsuccessful = failed or (400 <= code < 500 and code != 401 and code != 403)  # type: ignore[operator]
        state = job.br_status
        if state is not None and (unsuccessful or type(state) is not int):
            job.br_status = (
                index
                if state is _NEW and not unsuccessful
                else self._retried(e, state, unsuccessful, index)
            )

        # honours_retry_after (``_after_retry_after`` and ``_retry_after`` for a status read of
        # a job, which is in no scope of submits: the keys of ``_scope_key`` made here)
        credential = e.credential
        started_at = e.response_started_at
        pending = self.ra_pending
        if pending:
            for scope_kind in self.ra_kinds:
                if scope_kind == "job":
                    key: tuple[object, ...] = ("job", credential, job_id)
                elif scope_kind == "account":
                    key = ("account", credential)
                elif scope_kind == "request":
                    key = ("request", credential, "status", e.request_digest)
                else:
                    continue
                heap = pending.get(key)  # (never empty)
                if heap is None:
                    continue
                if type(heap) is tuple:  # one source, as itself
                    if heap[0] <= received:
                        del pending[key]
                        if received < heap[2]:
                            self._early(heap[1], heap[3], e)
                elif heap[0][0] <= received:
                    while heap and heap[0][0] <= received:
                        _, at, early, source = _heappop(heap)
                        if received < early:
                            self._early(at, source, e)
                    if not heap:
                        del pending[key]
        if record is not None:
            not_before = record.not_before
            if not_before is not None:
                scope = self.ra_scope
                if scope == "account" or (scope == "auto" and code == 429):
                    scope_kind, key = "account", ("account", credential)
                else:
                    scope_kind, key = "job", ("job", credential, job_id)
                if scope_kind not in self.ra_kinds:
                    if self.ra_kinds is _NO_LIST:
                        self.ra_kinds = []
                    self.ra_kinds.append(scope_kind)
                if pending is _NO_DICT:
                    self.ra_pending = pending = {}
                item = (
                    _INF if started_at is None else started_at,
                    index,
                    not_before - (self.date_slack if record.form in _DATE_FORMS else EPSILON),
                    _held_of(e, "status", job.job_id) if held is None else held,
                )
                heap = pending.get(key)
                if heap is None:
                    pending[key] = item  # (one source as itself, no list)
                elif type(heap) is tuple:
                    pending[key] = heap = [heap]
                    _heappush(heap, item)
                else:
                    _heappush(heap, item)

        # no_retry_on_auth_error (``_auth`` for a refusal of a credential with no refusal
        # waiting: the usual case)
        refusals = self.au_pending
        if refusals or code == 401 or code == 403:
            waiting = refusals.get(credential)
            if waiting:
                self._auth(e, index, code)
            elif (code == 401 or code == 403) and credential not in self.au_retried:
                # (no refusal with it waits: a heap is emptied only by a retry, and a
                # credential retried is in ``au_retried``); one refusal is kept as itself, with
                # the job's id and the code as the judge already holds them (a journal of
                # refused credentials keeps one a credential)
                if refusals is _NO_DICT:
                    self.au_pending = refusals = {}
                refusals[credential] = (
                    _INF if started_at is None else started_at,
                    index,
                    seq,
                    "status",
                    job.job_id,
                    401 if code == 401 else 403,
                )

        # deadline
        deadline = self.deadline
        if deadline is not None:
            if started:
                job.dl_seq, job.dl_received, job.dl_submitted = seq, received, False
                job.dl_limit = received + deadline + self.slack + EPSILON
            if not job.dl_submitted:
                maxima = job.dl_maxima
                if maxima is None:
                    job.dl_maxima = maxima = []
                if not maxima or received > maxima[-1][0]:
                    maxima.append((received, seq, "status", e.client))
            if job.dl_found is None and received > job.dl_limit:
                job.dl_found = self._late(job, "status", seq, received, e.client)

        self.status_reads += 1
        rates = self.rates
        if rates is None and self.limits.status_rate is not None:
            rates = self._rates(e)
        if rates is not None:
            rates.add(e)
        # no_overlap
        negated = job.ov_negated
        if negated is None:  # the job's first read: as itself (``_Job.ov_negated``)
            in_order = self.status_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)
            job.ov_negated = -((_INF if started_at is None else started_at) - EPSILON)
            job.ov_reads = (seq, received)
        else:
            reads = job.ov_reads
            if type(negated) is float:  # one read kept, as itself: what the lists would do
                if negated < -received:  # (``_bisect_left`` of it: 1) it may still be pending
                    found = job.ov_found
                    if found is None:
                        job.ov_found = found = []
                        self.found_jobs = True
                    found += (seq, reads[0], received, reads[1])
                value = (_INF if started_at is None else started_at) - EPSILON
                if -negated <= value:  # it is let go (reads in order): this one kept as itself
                    job.ov_negated = -value
                    job.ov_reads = (seq, received)
                else:  # both kept: the lists, from here on
                    job.ov_negated = [negated, -value]
                    job.ov_reads = [*reads, seq, received]
            else:
                if negated:
                    above = _bisect_left(negated, -received)
                    if above:
                        prev_seq, prev_received = reads[2 * above - 2], reads[2 * above - 1]
                        found = job.ov_found
                        if found is None:
                            job.ov_found = found = []
                            self.found_jobs = True
                        found += (seq, prev_seq, received, prev_received)
                value = (_INF if started_at is None else started_at) - EPSILON
                while negated and -negated[-1] <= value:
                    negated.pop()
                    del reads[-2:]
                negated.append(-value)
                reads += (seq, received)
        # honours_poll_after
        if job.pa_seq is not None:
            hint = job.pa_hint
            answered = job.pa_seen
            if hint is not None and received >= answered:
                gap = received - answered
                tolerance = self.poll_tolerance
                if gap < hint * (1 - tolerance) - EPSILON:
                    polls = job.pa_found
                    if polls is None:
                        job.pa_found = polls = []
                        self.found_jobs = True
                    polls += (answered, received, hint, job.pa_seq, seq)
        job.pa_seq = seq
        job.pa_seen = seen
        poll_after = e.poll_after
        job.pa_hint = poll_after if poll_after is not None and ok and not terminal else None

        # stops_at_terminal
        first = job.st_seq
        if terminal and (first is None or seen < job.st_at):
            job.st_seq, job.st_status, job.st_at, job.st_found = seq, status, seen, None
        elif first is not None and job.st_found is None and seq > first and received >= job.st_at:
            job.st_found, job.st_found_at = seq, received
            self.found_jobs = True

    def _add(self, e: EntryLike) -> None:
        """``add`` for any entry (the general path: each rule's part in turn)."""
        index = self.count
        self.count = index + 1
        if not index:
            self.client = e.client
        kind = e.kind
        job_id = e.job_id
        seq = e.seq
        received = e.received_at
        status = e.job_status
        status = _status_of(status, status)
        code = e.status_code
        completed = e.completed_at
        seen = _INF if completed is None else completed
        dropped = e.dropped
        # ``EntryLike.failed``, and the answer's being a 2xx (``_rules._ok``)
        failed = dropped is not None or code is None or code == 429 or code >= 500
        ok = not failed and 200 <= code < 300  # type: ignore[operator]
        terminal = status in TERMINAL_STATUSES
        record = e.retry_after

        # what the metrics and coverage count (``_stream``)
        if code is not None:
            codes = self.codes
            codes[code] = codes.get(code, 0) + 1
        if failed:
            self.any_failed = True
            if code == 429:
                self.rate_limit_hits += 1
            if dropped is not None or code is None:
                self.dropped += 1
        if record is not None:
            forms = self.forms
            if forms is _NO_DICT:
                self.forms = forms = {}
            forms[record.form] = forms.get(record.form, 0) + 1
        fault = e.fault
        if fault:
            faults = self.faults
            if faults is _NO_DICT:
                self.faults = faults = {}
            faults[fault] = faults.get(fault, 0) + 1
        if status and status not in self.observed:
            self.observed = _observe(self.observed, status)

        jobs = self.jobs
        job: _Job | None = None
        held: Held | None = None
        started = False
        if job_id is not None:
            job = jobs.get(job_id)
            if job is None:
                if jobs and self.entry_list is None:
                    self._listed()
                jobs[job_id] = job = _Job(job_id)
            job.end = seq
            if not job.own:
                job.own = True
                in_order = self.entry_list  # (None: the judge's one job, if any)
                if in_order is not None:
                    in_order.append(job)
                started = True

        # single_retrieval and no_premature_retrieval: an entry shows its own job, a list
        # answer each job it lists (``_with_listed``); with them what the stream keeps of
        # each job's last entry (``_stream``'s gave-up warning) and no_resubmission's news
        # of the job's end or of a status read, which the submits of later seqs are held to
        listed = e.listed
        retrieval = ok and (kind == "content" or e.inline_result is True)
        if listed and kind == "list":
            for shown_id, listed_status in listed:
                shown_status = _status_of(listed_status, listed_status)
                other = jobs.get(shown_id)
                if other is None:
                    if jobs and self.entry_list is None:
                        self._listed()
                    jobs[shown_id] = other = _Job(shown_id)
                self._shown(e, other, shown_status, seen, retrieval)
                if other.last_rank < 0:
                    other.last_rank = self.ranked
                    self.ranked += 1
                other.last = None  # a list answer: never a read the client gave up after
                if shown_status in TERMINAL_STATUSES:
                    other.ended = True
                    if other.rs_seq != seq:
                        other.rs_seq = seq
                        other.rs_old_ended = other.rs_ended
                        other.rs_old_read = other.rs_read
                        if other.rs_read is not None:
                            self._held(other, seq)
                    if seen < other.rs_ended:
                        other.rs_ended = seen
        elif job is not None:
            self._shown(e, job, status, seen, retrieval)
            if job.last_rank < 0:
                job.last_rank = self.ranked
                self.ranked += 1
            held = (
                _held_of(e, _KINDS.get(kind, kind), job.job_id)
                if failed and (kind == "status" or kind == "content")
                else None
            )
            job.last = held
            if terminal:
                job.ended = True
            # (a status read that did not fail, of a job whose last read did not, changes
            # nothing here)
            if terminal or (kind == "status" and (failed or job.rs_read is not None)):
                if job.rs_seq != seq:
                    job.rs_seq = seq
                    job.rs_old_ended = job.rs_ended
                    job.rs_old_read = job.rs_read
                    if job.rs_read is not None:
                        self._held(job, seq)
                if terminal and seen < job.rs_ended:
                    job.rs_ended = seen
                if kind == "status":
                    job.rs_read = held

        if terminal and job_id and completed is not None and job.seen_at is None:  # type: ignore[union-attr]
            job.seen_at = completed  # type: ignore[union-attr]
            self.seen_count += 1
            in_order = self.seen_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)  # type: ignore[arg-type]

        # bounded_retries, and the retries the metrics count (the same groups, of any key)
        key = e.request_digest if kind == "submit" else job_id
        if job is not None and (kind == "status" or kind == "content"):
            # (the job's two groups: its ``fl_status`` and ``fl_content``)
            last_failed = job.fl_status if kind == "status" else job.fl_content
            if last_failed is not None or failed:
                if last_failed:
                    self.retries += 1
                if kind == "status":
                    job.fl_status = failed
                else:
                    job.fl_content = failed
        elif failed or self.failed_last:
            group = (kind, key)
            failed_last = self.failed_last
            if failed_last.get(group, False):
                self.retries += 1
            if failed or group in failed_last:
                if failed_last is _NO_DICT:
                    self.failed_last = failed_last = {}
                failed_last[group] = failed
        if key is not None:
            unsuccessful = failed or (
                400 <= code < 500 and code != 401 and code != 403  # type: ignore[operator]
            )
            if job is not None and (kind == "status" or kind == "content"):
                # (a job's status reads and content fetches: kept by the job)
                state = job.br_status if kind == "status" else job.br_content
                if state is not None and (unsuccessful or type(state) is not int):
                    state = self._retried(e, state, unsuccessful, index)
                    if kind == "status":
                        job.br_status = state
                    else:
                        job.br_content = state
            else:
                br_group: _Group = key if kind == "submit" else (kind, key)
                groups = self.br_groups
                state = groups.get(br_group, _NEW)
                if state is not None and (unsuccessful or type(state) is not int):
                    groups[br_group] = self._retried(e, state, unsuccessful, index)

        # honours_retry_after
        if self.ra_pending:
            self._after_retry_after(e, received)
        if record is not None and record.not_before is not None:
            self._retry_after(e, index, held, None if job is None else job.job_id)

        # no_resubmission
        if kind == "submit":
            self._submitted(e, failed, seq)

        # no_retry_on_auth_error
        if self.au_pending or code == 401 or code == 403:
            self._auth(e, index, code)

        if job is None:
            if kind == "status":
                self.status_reads += 1
                rates = self.rates
                if rates is None and self.limits.status_rate is not None:
                    rates = self._rates(e)
                if rates is not None:
                    rates.add(e)
            return

        # deadline
        deadline = self.deadline
        if deadline is not None:
            if started:
                job.dl_seq, job.dl_received, job.dl_submitted = seq, received, kind == "submit"
                job.dl_limit = received + deadline + self.slack + EPSILON
            elif not job.dl_submitted and kind == "submit":
                self._submit_starts(job, seq, received)
            if not job.dl_submitted:
                maxima = job.dl_maxima
                if maxima is None:
                    job.dl_maxima = maxima = []
                if not maxima or received > maxima[-1][0]:
                    maxima.append((received, seq, kind, e.client))
            if job.dl_found is None and received > job.dl_limit:
                job.dl_found = self._late(job, kind, seq, received, e.client)

        if kind == "status":
            self.status_reads += 1
            rates = self.rates
            if rates is None and self.limits.status_rate is not None:
                rates = self._rates(e)
            if rates is not None:
                rates.add(e)
            # no_overlap
            negated = job.ov_negated
            started_at = e.response_started_at
            if negated is None:  # the job's first read: as itself (``_Job.ov_negated``)
                in_order = self.status_list  # (None: the judge's one job, if any)
                if in_order is not None:
                    in_order.append(job)
                job.ov_negated = -((_INF if started_at is None else started_at) - EPSILON)
                job.ov_reads = (seq, received)
            else:
                reads = job.ov_reads
                if type(negated) is float:  # one read kept, as itself: what the lists would do
                    if (
                        negated < -received
                    ):  # (``bisect.bisect_left`` of it: 1) it may still be pending
                        found = job.ov_found
                        if found is None:
                            job.ov_found = found = []
                            self.found_jobs = True
                        found += (seq, reads[0], received, reads[1])
                    value = (_INF if started_at is None else started_at) - EPSILON
                    if -negated <= value:  # it is let go (reads in order): this one kept as itself
                        job.ov_negated = -value
                        job.ov_reads = (seq, received)
                    else:  # both kept: the lists, from here on
                        job.ov_negated = [negated, -value]
                        job.ov_reads = [*reads, seq, received]
                else:
                    if negated:
                        above = bisect.bisect_left(negated, -received)
                        if above:
                            prev_seq, prev_received = reads[2 * above - 2], reads[2 * above - 1]
                            found = job.ov_found
                            if found is None:
                                job.ov_found = found = []
                                self.found_jobs = True
                            found += (seq, prev_seq, received, prev_received)
                    value = (_INF if started_at is None else started_at) - EPSILON
                    while negated and -negated[-1] <= value:
                        negated.pop()
                        del reads[-2:]
                    negated.append(-value)
                    reads += (seq, received)
            # honours_poll_after
            if job.pa_seq is not None:
                hint = job.pa_hint
                answered = job.pa_seen
                if hint is not None and received >= answered:
                    gap = received - answered
                    tolerance = self.poll_tolerance
                    if gap < hint * (1 - tolerance) - EPSILON:
                        polls = job.pa_found
                        if polls is None:
                            job.pa_found = polls = []
                            self.found_jobs = True
                        self.found_jobs = True
                        polls += (answered, received, hint, job.pa_seq, seq)
        if kind == "status" or kind == "submit":
            job.pa_seq = seq
            job.pa_seen = seen
            poll_after = e.poll_after
            job.pa_hint = poll_after if poll_after is not None and ok and not terminal else None

        # stops_at_terminal
        first = job.st_seq
        if terminal and (first is None or seen < job.st_at):
            job.st_seq, job.st_status, job.st_at, job.st_found = seq, status, seen, None
        elif (
            first is not None
            and job.st_found is None
            and kind == "status"
            and seq > first
            and received >= job.st_at
        ):
            job.st_found, job.st_found_at = seq, received
            self.found_jobs = True

    def _counted(self, e: EntryLike, code: int | None) -> bool:
        """Count ``e`` for the metrics and coverage (``_stream``): its code, whether it was
        refused with 429 or dropped, its Retry-After's form, its fault, the job status it
        showed; whether it failed (``EntryLike.failed``)."""
        dropped = e.dropped
        if dropped is None and code is not None and code < 500 and code != 429:
            failed = False
            codes = self.codes
            codes[code] = codes.get(code, 0) + 1
        else:
            failed = True
            self.any_failed = True
            if code is not None:
                codes = self.codes
                codes[code] = codes.get(code, 0) + 1
                if code == 429:
                    self.rate_limit_hits += 1
            if dropped is not None or code is None:
                self.dropped += 1
        record = e.retry_after
        if record is not None:
            forms = self.forms
            if forms is _NO_DICT:
                self.forms = forms = {}
            forms[record.form] = forms.get(record.form, 0) + 1
        fault = e.fault
        if fault:
            faults = self.faults
            if faults is _NO_DICT:
                self.faults = faults = {}
            faults[fault] = faults.get(fault, 0) + 1
        status = e.job_status
        if status and status not in self.observed:
            self.observed = _observe(self.observed, status)
        return failed

    def _submit(self, e: EntryLike, job_id: str) -> None:
        """``_add`` for a submit that named its job: the general path's parts for a submit."""
        index = self.count
        self.count = index + 1
        if not index:
            self.client = e.client
        seq = e.seq
        received = e.received_at
        status = e.job_status
        status = _status_of(status, status)
        code = e.status_code
        completed = e.completed_at
        seen = _INF if completed is None else completed
        failed = self._counted(e, code)
        ok = not failed and 200 <= code < 300  # type: ignore[operator]
        terminal = status in TERMINAL_STATUSES

        jobs = self.jobs
        job = jobs.get(job_id)
        if job is None:
            if jobs and self.entry_list is None:
                self._listed()
            jobs[job_id] = job = _Job(job_id)
        job.end = seq
        started = False
        if not job.own:
            job.own = True
            in_order = self.entry_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)
            started = True

        # single_retrieval and no_premature_retrieval (``_shown`` for a submit)
        if not job.shown:
            job.shown = True
            in_order = self.shown_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)
        if job.sr_saw is None and status in SUCCESS_STATUSES:
            job.sr_saw = (seq, seen, status, self.client)
        if ok and e.inline_result is True:
            self._retrieved(e, job)
        if job.pr_pending_seq != seq:
            if job.pr_pending_success < job.pr_success:
                job.pr_success = job.pr_pending_success
            if job.pr_pending_status is not None:
                job.pr_last_status, job.pr_last_seq = job.pr_pending_status, job.pr_pending_seq
            job.pr_pending_success, job.pr_pending_status = _INF, None
            job.pr_pending_seq = seq
        if status is not None:
            job.pr_pending_status = status
            if status in SUCCESS_STATUSES and seen < job.pr_pending_success:
                job.pr_pending_success = seen
        # the stream's gave-up warning, and no_resubmission's news
        if job.last_rank < 0:
            job.last_rank = self.ranked
            self.ranked += 1
        job.last = None
        if terminal:
            job.ended = True
            if job.rs_seq != seq:
                job.rs_seq = seq
                job.rs_old_ended = job.rs_ended
                job.rs_old_read = job.rs_read
                if job.rs_read is not None:
                    self._held(job, seq)
            if seen < job.rs_ended:
                job.rs_ended = seen
            if job_id and completed is not None and job.seen_at is None:
                job.seen_at = completed
                self.seen_count += 1
                in_order = self.seen_list  # (None: the judge's one job, if any)
                if in_order is not None:
                    in_order.append(job)

        # bounded_retries, and the retries the metrics count (per request body)
        key = e.request_digest
        failed_last = self.failed_last
        if failed_last or failed:
            group = ("submit", key)
            if failed_last.get(group, False):
                self.retries += 1
            if failed or group in failed_last:
                if failed_last is _NO_DICT:
                    self.failed_last = failed_last = {}
                failed_last[group] = failed
        if key is not None:
            unsuccessful = failed or (
                400 <= code < 500 and code != 401 and code != 403  # type: ignore[operator]
            )
            groups = self.br_groups  # (``_Group``: a submit's by its request body)
            state = groups.get(key, _NEW)
            if state is not None and (unsuccessful or type(state) is not int):
                groups[key] = (
                    index
                    if state is _NEW and not unsuccessful
                    else self._retried(e, state, unsuccessful, index)
                )

        # honours_retry_after
        if self.ra_pending:
            self._after_retry_after(e, received)
        record = e.retry_after
        if record is not None and record.not_before is not None:
            self._retry_after(e, index, None, job.job_id)

        # no_resubmission
        self._submitted(e, failed, seq)

        # no_retry_on_auth_error
        if self.au_pending or code == 401 or code == 403:
            self._auth(e, index, code)

        # deadline (from the job's first submit: no entry kept for it)
        deadline = self.deadline
        if deadline is not None:
            if started:
                job.dl_seq, job.dl_received, job.dl_submitted = seq, received, True
                job.dl_limit = received + deadline + self.slack + EPSILON
            elif not job.dl_submitted:
                self._submit_starts(job, seq, received)
            if job.dl_found is None and received > job.dl_limit:
                job.dl_found = self._late(job, "submit", seq, received, e.client)

        # honours_poll_after
        job.pa_seq = seq
        job.pa_seen = seen
        poll_after = e.poll_after
        job.pa_hint = poll_after if poll_after is not None and ok and not terminal else None

        # stops_at_terminal
        if terminal and (job.st_seq is None or seen < job.st_at):
            job.st_seq, job.st_status, job.st_at, job.st_found = seq, status, seen, None

    def _content(self, e: EntryLike, job_id: str) -> None:
        """``_add`` for a content fetch of a job: the general path's parts for one."""
        index = self.count
        self.count = index + 1
        if not index:
            self.client = e.client
        seq = e.seq
        received = e.received_at
        status = e.job_status
        status = _status_of(status, status)
        code = e.status_code
        completed = e.completed_at
        seen = _INF if completed is None else completed
        failed = self._counted(e, code)
        ok = not failed and 200 <= code < 300  # type: ignore[operator]
        terminal = status in TERMINAL_STATUSES

        jobs = self.jobs
        job = jobs.get(job_id)
        if job is None:
            if jobs and self.entry_list is None:
                self._listed()
            jobs[job_id] = job = _Job(job_id)
        job.end = seq
        started = False
        if not job.own:
            job.own = True
            in_order = self.entry_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)
            started = True

        # single_retrieval and no_premature_retrieval (``_shown`` for a content fetch)
        if not job.shown:
            job.shown = True
            in_order = self.shown_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)
        if job.sr_saw is None and status in SUCCESS_STATUSES:
            job.sr_saw = (seq, seen, status, self.client)
        if ok:
            self._retrieved(e, job)
        if job.pr_pending_seq != seq:
            if job.pr_pending_success < job.pr_success:
                job.pr_success = job.pr_pending_success
            if job.pr_pending_status is not None:
                job.pr_last_status, job.pr_last_seq = job.pr_pending_status, job.pr_pending_seq
            job.pr_pending_success, job.pr_pending_status = _INF, None
            job.pr_pending_seq = seq
        if status is not None:
            job.pr_pending_status = status
            if status in SUCCESS_STATUSES and seen < job.pr_pending_success:
                job.pr_pending_success = seen
        if not job.pr_success <= received + EPSILON:
            self._premature(e, job, seq, received)
        # the stream's gave-up warning, and no_resubmission's news
        if job.last_rank < 0:
            job.last_rank = self.ranked
            self.ranked += 1
        held = _held_of(e, "content", job.job_id) if failed else None
        job.last = held
        if terminal:
            job.ended = True
            if job.rs_seq != seq:
                job.rs_seq = seq
                job.rs_old_ended = job.rs_ended
                job.rs_old_read = job.rs_read
                if job.rs_read is not None:
                    self._held(job, seq)
            if seen < job.rs_ended:
                job.rs_ended = seen
            if job_id and completed is not None and job.seen_at is None:
                job.seen_at = completed
                self.seen_count += 1
                in_order = self.seen_list  # (None: the judge's one job, if any)
                if in_order is not None:
                    in_order.append(job)

        # bounded_retries, and the retries the metrics count
        last_failed = job.fl_content
        if last_failed is not None or failed:
            if last_failed:
                self.retries += 1
            job.fl_content = failed
        unsuccessful = failed or (400 <= code < 500 and code != 401 and code != 403)  # type: ignore[operator]
        state = job.br_content  # (``_Group``: the job's content fetches, kept by the job)
        if state is not None and (unsuccessful or type(state) is not int):
            job.br_content = (
                index
                if state is _NEW and not unsuccessful
                else self._retried(e, state, unsuccessful, index)
            )

        # honours_retry_after
        if self.ra_pending:
            self._after_retry_after(e, received)
        record = e.retry_after
        if record is not None and record.not_before is not None:
            self._retry_after(e, index, held, job.job_id)

        # no_retry_on_auth_error
        if self.au_pending or code == 401 or code == 403:
            self._auth(e, index, code)

        # deadline
        deadline = self.deadline
        if deadline is not None:
            if started:
                job.dl_seq, job.dl_received, job.dl_submitted = seq, received, False
                job.dl_limit = received + deadline + self.slack + EPSILON
            if not job.dl_submitted:
                maxima = job.dl_maxima
                if maxima is None:
                    job.dl_maxima = maxima = []
                if not maxima or received > maxima[-1][0]:
                    maxima.append((received, seq, "content", e.client))
            if job.dl_found is None and received > job.dl_limit:
                job.dl_found = self._late(job, "content", seq, received, e.client)

        # stops_at_terminal
        if terminal and (job.st_seq is None or seen < job.st_at):
            job.st_seq, job.st_status, job.st_at, job.st_found = seq, status, seen, None

    def _retry_after(self, e: EntryLike, index: int, held: Held | None, job_id: str | None) -> None:
        """``honours_retry_after``'s part for an answer with a Retry-After (a source): kept as
        ``held`` (None: made here, with the judge's ``job_id``)."""
        scope_kind = _scope_kind(e, _scope(e, self.limits))
        if scope_kind not in self.ra_kinds:
            if self.ra_kinds is _NO_LIST:
                self.ra_kinds = []
            self.ra_kinds.append(scope_kind)
        scope_key = _scope_key(e, scope_kind)
        assert scope_key is not None  # a source is in its own scope
        if self.ra_pending is _NO_DICT:
            self.ra_pending = {}
        record = e.retry_after
        assert record is not None  # a source
        assert record.not_before is not None  # a source
        slack = self.date_slack if record.form in _DATE_FORMS else EPSILON
        if held is None:
            kind = e.kind
            held = _held_of(e, _KINDS.get(kind, kind), job_id)
        item = (_headers_at(e), index, record.not_before - slack, held)
        pending = self.ra_pending
        heap = pending.get(scope_key)
        if heap is None:
            pending[scope_key] = item  # (one source as itself, no list)
        elif type(heap) is tuple:
            pending[scope_key] = heap = [heap]
            heapq.heappush(heap, item)
        else:
            heapq.heappush(heap, item)

    def _rates(self, e: EntryLike) -> Judge | None:
        """Make ``status_rate``'s judge at status read ``e`` (with a budget set), for ``e`` to
        be added to it; None when ``e`` is the first read of a bounded judge's, kept until the
        second as its time and seq (``rates_first`` and ``rates_seq``: no pair made) and then
        added first: one read never breaks a budget (of at least one read), and a run of many
        clients that read once each (the judge, two lists and a float each) would make as many
        judges that never find."""
        keep_gone = self.keep_gone
        if keep_gone < 0:
            self.rates = rates = StatusRate(self.limits)
            return rates
        first = self.rates_first
        if first is None:
            self.rates_first, self.rates_seq = e.received_at, e.seq
            return None
        self.rates = bounded = BoundedStatusRate(self.limits, keep_gone=keep_gone)
        bounded.add(_Read("status", first, self.rates_seq, e.client))
        self.rates_first = None
        return bounded

    def _shown(
        self, e: EntryLike, job: _Job, status: str | None, seen: float, retrieval: bool
    ) -> None:
        """``single_retrieval``'s and ``no_premature_retrieval``'s parts for a job ``e``
        showed (with ``status``)."""
        if not job.shown:
            job.shown = True
            in_order = self.shown_list  # (None: the judge's one job, if any)
            if in_order is not None:
                in_order.append(job)
        seq = e.seq
        # single_retrieval
        if job.sr_saw is None and status in SUCCESS_STATUSES:
            job.sr_saw = (seq, seen, status, self.client)
        if retrieval:
            self._retrieved(e, job)
        # no_premature_retrieval
        if job.pr_pending_seq != seq:
            if job.pr_pending_success < job.pr_success:
                job.pr_success = job.pr_pending_success
            if job.pr_pending_status is not None:
                job.pr_last_status, job.pr_last_seq = job.pr_pending_status, job.pr_pending_seq
            job.pr_pending_success, job.pr_pending_status = _INF, None
            job.pr_pending_seq = seq
        if status is not None:
            job.pr_pending_status = status
            if status in SUCCESS_STATUSES and seen < job.pr_pending_success:
                job.pr_pending_success = seen
        received = e.received_at
        if e.kind == "content" and not job.pr_success <= received + EPSILON:
            self._premature(e, job, seq, received)

    def _premature(self, e: EntryLike, job: _Job, seq: int, received: float) -> None:
        """``no_premature_retrieval``'s part for a content fetch (the ``seq``-th, received at
        ``received``) of ``job`` before it was shown to succeed."""
        candidates = job.pr_candidates
        if candidates is None:
            job.pr_candidates = candidates = []
            self.found_jobs = True
        elif candidates and candidates[-1][0] <= received:
            return  # excused whenever the earlier candidate is: never the one reported
        last_seq = job.pr_last_seq
        last = (
            f"the last status it had seen was {job.pr_last_status!r} (#{last_seq})"
            if last_seq is not None
            else "it had seen no status of the job"
        )
        job_id = job.job_id
        candidates.append(
            (
                received,
                Violation(
                    "no_premature_retrieval",
                    job_id,
                    (*((last_seq,) if last_seq is not None else ()), seq),
                    f"content fetch #{seq} for job {job_id} at {fmt_time(received)}"
                    f" came before the client could have seen the job succeed; {last}",
                    e.client,
                ),
            )
        )

    def _retrieved(self, e: EntryLike, job: _Job) -> None:
        """``single_retrieval``'s part for an entry that retrieved ``job``'s result."""
        count = job.sr_count = job.sr_count + 1
        fetched = job.sr_fetched
        if fetched is None:
            job.sr_fetched = fetched = []
        if len(fetched) < 2 * self.keep:
            fetched += (e.seq, e.received_at)
        if count == self.allowed + 1:
            job.sr_extra = self._extra(e, job.job_id, fetched)

    def _extra(self, extra: EntryLike, job_id: str, fetched: list[Any]) -> Violation:
        """``single_retrieval``'s violation for the first retrieval too many."""
        self.found_jobs = True
        allowed = self.allowed
        head = f"{describe(extra)} at {fmt_time(extra.received_at)} {_got(extra)}"
        if allowed == 0:
            message = f"{head}, but no retrieval was expected"
        else:
            first_seq, first_received = fetched[0], fetched[1]
            times = "once" if allowed == 1 else f"{allowed} times"
            message = (
                f"{head} again; #{first_seq} had already retrieved it"
                f" at {fmt_time(first_received)} and it may be fetched {times}"
            )
        seqs = (*fetched[: 2 * allowed : 2], extra.seq)
        return Violation("single_retrieval", job_id, seqs, message, extra.client)

    def _retried(
        self, e: EntryLike, state: list[int] | int, unsuccessful: bool, index: int
    ) -> list[int] | int | None:
        """``bounded_retries``' part for ``e`` (the ``index``-th entry): what its group holds
        after it, from what it held (``state``, as ``br_groups`` has it; ``_NEW`` for
        nothing)."""
        if type(state) is int:  # none failed since its last success
            return [state, e.seq] if unsuccessful else state
        assert isinstance(state, list)
        if state is _NEW:
            return [index, e.seq] if unsuccessful else index
        failures = len(state) - 1  # (after the index of the group's first entry)
        if failures > self.max_retries:
            if self.br_found is _NO_LIST:
                self.br_found = []
            self.br_found.append(
                (
                    state[0],
                    Violation(
                        "bounded_retries",
                        e.job_id if e.kind != "submit" else None,
                        (*state[1:], e.seq),
                        f"{describe(e)} at {fmt_time(e.received_at)} was retry"
                        f" {failures} after {failures} consecutive failed attempts"
                        f" (#{state[1]} to #{state[-1]}); max_retries is"
                        f" {self.max_retries}",
                        e.client,
                    ),
                )
            )
            return None
        if unsuccessful:
            state.append(e.seq)
            return state
        return state[0]

    def _after_retry_after(self, e: EntryLike, received: float) -> None:
        """``honours_retry_after``'s part: judge the sources waiting in ``e``'s scopes."""
        pending = self.ra_pending
        for scope_kind in self.ra_kinds:
            key = _scope_key(e, scope_kind)
            if key is None:
                continue
            heap = pending.get(key)
            if heap is None:
                continue
            if type(heap) is tuple:  # one source, as itself
                if heap[0] <= received:
                    del pending[key]
                    if received < heap[2]:
                        self._early(heap[1], heap[3], e)
                continue
            while heap and heap[0][0] <= received:
                _, at, early, source = heapq.heappop(heap)
                if received < early:
                    self._early(at, source, e)
            if not heap:
                del pending[key]

    def _early(self, index: int, source: Held, later: EntryLike) -> None:
        """``honours_retry_after``'s violation: ``later`` came before the Retry-After of
        ``source`` (the ``index``-th entry) allowed it (less the slack of its form)."""
        seq, kind, job_id, code, dropped, _, raw, not_before, error_code = source
        assert not_before is not None  # sources have one
        scope = _scope_of(code, kind, error_code, self.limits)
        early = not_before - later.received_at
        if self.ra_found is _NO_LIST:
            self.ra_found = []
        self.ra_found.append(
            (
                index,
                Violation(
                    "honours_retry_after",
                    later.job_id if scope == "job" else job_id,
                    (seq, later.seq),
                    f"{describe(later)} at {fmt_time(later.received_at)} came"
                    f" {fmt_time(early)} before the Retry-After {raw!r} of"
                    f" #{seq} ({_answer_of(code, dropped)}, {scope} scope) allowed it at"
                    f" {fmt_time(not_before)}",
                    later.client,
                ),
            )
        )

    def _held(self, job: _Job, seq: int) -> None:
        """``job`` now holds a failed read as ``rs_old_read`` (its read before ``seq``, for a
        submit of that seq only): the job that held one before, at an earlier seq, lets its
        go (the entries come in seq order, so no submit of that seq is still to come), so
        that a judge holds about one such entry, not one a job."""
        held = self.rs_held
        if held is not None and held.rs_seq != seq:
            held.rs_old_read = None
        self.rs_held = job

    def _submitted(self, s: EntryLike, failed: bool, seq: int) -> None:
        """``no_resubmission``'s part for a submit (of ``seq``). ``rs_open`` holds a request
        body's jobs as a dict while there are two or more, and one as the pair of its id and
        submits (most request bodies make one job: no dict each; one submit, as most, is no
        tuple of its own: ``_makers``), none as nothing."""
        digest = s.request_digest
        rs_open = self.rs_open
        if type(rs_open) is tuple:  # one request body's, as (it, its jobs)
            held = rs_open[1] if rs_open[0] == digest else None
        else:
            held = rs_open.get(digest)
        candidates: dict[str, tuple[tuple[int, str | None, str | None], ...]]
        if held is None:
            candidates = _NO_DICT  # (the usual case: a dict only where a second job comes)
        elif type(held) is tuple:
            job = self.jobs[held[0]]
            if (
                not self.rs_last
                and (job.rs_old_ended if job.rs_seq == seq else job.rs_ended) <= s.received_at
            ):
                # the client had seen its one job end, and no failed submit holds this one:
                # all ``_resubmitted`` would do is let the job go (a client that submits the
                # same request over and over, each time once the last job ended)
                candidates = _NO_DICT
            else:
                candidates = {held[0]: _makers(held)}
        else:
            candidates = held
        rs_last = self.rs_last
        if candidates or rs_last:
            self._resubmitted(s, rs_last.get(digest), candidates, seq)
        if failed and s.idempotency_key is not None:
            if rs_last is _NO_DICT:
                self.rs_last = rs_last = {}
            rs_last[digest] = s  # the only last submit a retry is held to
        elif rs_last:
            rs_last.pop(digest, None)
        job_id = s.job_id
        if job_id is not None:
            if not candidates:  # its one job (a tuple: one object, not a list's two)
                pair = (job_id, s.seq, s.idempotency_key, s.credential)  # (``_makers``)
                if rs_open is _NO_DICT or (type(rs_open) is tuple and rs_open[0] == digest):
                    self.rs_open = (digest, pair)  # (``_open``'s, without its call)
                else:
                    self._open(digest, pair)
                return
            maker = (s.seq, s.idempotency_key, s.credential)
            makers = candidates.get(job_id)
            if makers is None:
                candidates[job_id] = (maker,)
            elif len(makers) == 1 and makers[0][1:] != maker[1:]:
                # the first submit under another key: an origin for some
                candidates[job_id] = (makers[0], maker)
        if len(candidates) > 1:
            if held is not candidates:
                self._open(digest, candidates)
        elif candidates:
            for only in candidates:
                makers = candidates[only]
                self._open(digest, (only, *makers[0]) if len(makers) == 1 else (only, makers))
        elif held is not None:
            if type(rs_open) is tuple:
                self.rs_open = _NO_DICT
            else:
                del rs_open[digest]

    def _open(self, digest: str | None, held: Any) -> None:
        """``rs_open[digest] = held``, with ``rs_open`` as the pair of ``digest`` and ``held``
        while no other request body has jobs open (most clients of many send one)."""
        rs_open = self.rs_open
        if rs_open is _NO_DICT:
            self.rs_open = (digest, held)
        elif type(rs_open) is tuple:
            if rs_open[0] == digest:
                self.rs_open = (digest, held)
            else:
                self.rs_open = {rs_open[0]: rs_open[1], digest: held}
        else:
            rs_open[digest] = held

    def _resubmitted(
        self,
        s: EntryLike,
        previous: EntryLike | None,
        candidates: dict[str, tuple[tuple[int, str | None, str | None], ...]],
        seq: int,
    ) -> None:
        if previous is not None and previous.failed and previous.idempotency_key is not None:
            failed = previous
            if s.idempotency_key != failed.idempotency_key:
                self._resubmission(
                    (
                        s.seq,
                        7,
                        _keyless_retry,
                        (s.job_id, s.seq, s.received_at, s.client, failed),
                    )
                )
                return
        jobs = self.jobs
        key, credential = s.idempotency_key, s.credential
        # the jobs the client had seen end, let go after the loop: the loop stops at the
        # first job this submit repeats, and a copy of the keys to loop over would cost a
        # client that resubmits one request n times O(n) a submit (each one leaves a job open)
        seen_end: list[str] = []
        for job_id in candidates:
            job = jobs[job_id]
            # what the entries of the seqs before this submit's told
            before = job.rs_seq == seq
            if (job.rs_old_ended if before else job.rs_ended) <= s.received_at:
                seen_end.append(job_id)  # the client had seen the job end
                continue
            if job_id == s.job_id:
                continue
            # a retry under the same Idempotency-Key cannot make a second job
            origin = next(
                (
                    p
                    for p in candidates[job_id]
                    if not (key is not None and p[1] == key and p[2] == credential)
                ),
                None,
            )
            if origin is None:
                continue
            # (its message is written only if it is shown: ``_resubmission_of``)
            read = job.rs_old_read if before else job.rs_read
            self._resubmission(
                (
                    s.seq,
                    7,
                    _resubmission_of,
                    (job_id, origin[0], read, s.seq, s.received_at, s.job_id, s.client),
                )
            )
            break
        for job_id in seen_end:
            del candidates[job_id]

    def _resubmission(self, found: Found) -> None:
        if self.rs_found is _NO_LIST:
            self.rs_found = []
        self.rs_found.append(found)

    def _auth(self, e: EntryLike, index: int, code: int | None) -> None:
        """``no_retry_on_auth_error``'s part."""
        credential = e.credential
        heap = self.au_pending.get(credential)
        if heap.__class__ is tuple:  # one refusal, kept as itself (``add``'s lane): a heap
            heap = [heap]
            self.au_pending[credential] = heap
        if heap:
            best = self.au_retried.get(credential)
            received = e.received_at
            while heap and heap[0][0] <= received:
                refused = heapq.heappop(heap)
                if best is None or refused[1] < best[0]:
                    best = (refused[1], refused, e)
            if best is not None:
                if self.au_retried is _NO_DICT:
                    self.au_retried = {}
                self.au_retried[credential] = best
                # only refusals earlier than the one retried can still be the one reported
                kept = [item for item in heap if item[1] < best[0]]
                if len(kept) < len(heap):
                    heapq.heapify(kept)
                    self.au_pending[credential] = heap = kept
        if (code == 401 or code == 403) and credential not in self.au_retried:
            if heap is None:
                if self.au_pending is _NO_DICT:
                    self.au_pending = {}
                self.au_pending[credential] = heap = []
            heapq.heappush(heap, (_headers_at(e), index, e.seq, e.kind, e.job_id, code))

    def _submit_starts(self, job: _Job, seq: int, received: float) -> None:
        """``deadline``'s part for the first submit of a job whose first entry was not one:
        the deadline now runs from it, and any entry kept since may be late by it."""
        deadline = self.deadline
        assert deadline is not None  # only judged with one
        slack = self.slack
        job.dl_seq, job.dl_received, job.dl_submitted, job.dl_found = seq, received, True, None
        job.dl_limit = received + deadline + slack + EPSILON
        limit = received + deadline + slack
        for at, other_seq, other_kind, client in job.dl_maxima or ():
            if at > limit + EPSILON:
                job.dl_found = self._late(job, other_kind, other_seq, at, client)
                break
        job.dl_maxima = None

    def _late(self, job: _Job, kind: str, seq: int, received: float, client: str) -> Violation:
        deadline = self.deadline
        assert deadline is not None  # only judged with one
        self.found_jobs = True
        start = job.dl_received
        return Violation(
            "deadline",
            job.job_id,
            (job.dl_seq, seq),
            f"{_describe(kind, seq, job.job_id)} at {fmt_time(received)} came"
            f" {fmt_time(received - start - deadline)} after the"
            f" deadline of {fmt_time(deadline)} from #{job.dl_seq} at"
            f" {fmt_time(start)} (slack {fmt_time(self.limits.deadline_slack)})",
            client,
        )

    def close_rules(self, hooks: Hooks) -> list[list[Found]]:
        """What each rule found (in ``CLIENT_RULES``' order), each rule's in the order its
        function yields its violations."""
        return [
            list(self._close_overlap()),
            _made(self._close_single_retrieval(), 1),
            _made(self._close_premature(hooks), 2),
            _made([v for _, v in sorted(self.br_found, key=_FIRST)], 3),
            _made([v for _, v in sorted(self.ra_found, key=_FIRST)], 4),
            list(self._close_poll_after(hooks)),
            list(self._close_ended()),
            list(self.rs_found),
            _made(self._close_auth(), 8),
            _made([job.dl_found for job in self.entry_jobs if job.dl_found is not None], 9),
            [] if self.rates is None else _made(self.rates.close(hooks), 10),
        ]

    def close_found(self, hooks: Hooks) -> list[Found]:
        """What ``close`` returns, each violation's message not yet written (see ``Found``)."""
        return list(self.iter_found(hooks))

    def iter_found(self, hooks: Hooks) -> Iterator[Found]:
        """``close_found``'s violations one at a time (the most numerous are not all made at
        once: a text report keeps only the first few)."""
        # (each rule's part skipped at once when it found nothing: a run of many clients
        # closes as many judges; ``found_jobs`` is False while no job holds anything found)
        found = self.found_jobs
        if found and self.status_jobs:
            yield from self._close_overlap()
        shown = self.shown_jobs
        if shown and (found or self.wanted is not None):
            yield from _made(self._close_single_retrieval(), 1)
            if found:
                yield from _made(self._close_premature(hooks), 2)
        if self.br_found:
            yield from _made([v for _, v in sorted(self.br_found, key=_FIRST)], 3)
        if self.ra_found:
            yield from _made([v for _, v in sorted(self.ra_found, key=_FIRST)], 4)
        jobs = self.entry_jobs
        if found and jobs:
            yield from self._close_poll_after(hooks)
            yield from self._close_ended()
        if self.rs_found:
            yield from self.rs_found
        if self.au_retried:
            yield from _made(self._close_auth(), 8)
        if found and jobs and self.deadline is not None:
            yield from _made([job.dl_found for job in jobs if job.dl_found is not None], 9)
        if self.rates is not None:
            yield from _made(self.rates.close(hooks), 10)

    def close(self, hooks: Hooks) -> list[Violation]:
        """The violations, rule by rule, each rule's in the order its function yields them."""
        return [violation(f) for f in self.close_found(hooks)]

    def _close_single_retrieval(self) -> list[Violation]:
        found: list[Violation] = []
        wanted = self.wanted
        for job in self.shown_jobs:
            if not job.own:
                continue
            if job.sr_extra is not None:
                found.append(job.sr_extra)
            elif wanted is not None and job.sr_count < wanted and job.sr_saw is not None:
                seq, seen, status, client = job.sr_saw
                found.append(
                    Violation(
                        "single_retrieval",
                        job.job_id,
                        (seq, *(job.sr_fetched or ())[::2]),
                        f"job {job.job_id} was shown {status!r} by #{seq} at"
                        f" {fmt_time(seen)} but its content was retrieved"
                        f" {job.sr_count} time(s); expected {wanted}",
                        client,
                    )
                )
        return found

    def _close_premature(self, hooks: Hooks) -> list[Violation]:
        found: list[Violation] = []
        for job in self.shown_jobs:
            if not job.own or not job.pr_candidates:
                continue
            told_at = min(
                (
                    at
                    for at, event in hooks.get(job.job_id, ())
                    if (event or "").removeprefix("job.") in SUCCESS_STATUSES
                ),
                default=_INF,
            )
            for received_at, violation in job.pr_candidates:
                if not told_at <= received_at:
                    found.append(violation)
                    break
        return found

    def _close_overlap(self) -> Iterator[Found]:
        client = self.client
        for job in self.status_jobs:
            found = job.ov_found
            if not found:
                continue
            job_id = job.job_id
            for at in range(0, len(found), 4):
                seq, prev_seq, received, prev_received = found[at : at + 4]
                yield (seq, 0, _overlap, (job_id, prev_seq, seq, received, prev_received, client))

    def _close_ended(self) -> Iterator[Found]:
        client = self.client
        for job in self.entry_jobs:
            seq = job.st_found
            if seq is not None:  # (the entry that showed the job ended has not changed since)
                first, status, at = job.st_seq, job.st_status, job.st_at
                yield (
                    seq,
                    6,
                    _ended,
                    (job.job_id, first, seq, job.st_found_at, status, at, client),
                )

    def _close_poll_after(self, hooks: Hooks) -> Iterator[Found]:
        client = self.client
        tolerance = self.poll_tolerance
        for job in self.entry_jobs:
            polls = job.pa_found
            if not polls:
                continue
            job_id = job.job_id
            times = sorted(at for at, _ in hooks.get(job_id, ()))
            for at in range(0, len(polls), 5):
                answered, received, hint, prev_seq, seq = polls[at : at + 5]
                after = bisect.bisect_left(times, answered)
                if not (after < len(times) and times[after] <= received):
                    yield (
                        seq,
                        5,
                        _too_soon,
                        (
                            job_id,
                            prev_seq,
                            seq,
                            received,
                            received - answered,
                            hint,
                            tolerance,
                            client,
                        ),
                    )

    def _close_auth(self) -> list[Violation]:
        found: list[Violation] = []
        for _, refused, later in sorted(self.au_retried.values(), key=_FIRST):
            headers_at, _, seq, kind, job_id, code = refused
            credential = later.credential
            cred = f"credential {credential}" if credential is not None else "no credentials"
            found.append(
                Violation(
                    "no_retry_on_auth_error",
                    later.job_id,
                    (seq, later.seq),
                    f"{describe(later)} at {fmt_time(later.received_at)} was sent with the same"
                    f" {cred} after {_describe(kind, seq, job_id)} was refused with"
                    f" {code} at {fmt_time(headers_at)}",
                    later.client,
                )
            )
        return found


#: A violation found, its message not yet written (most are never shown): its last seq, its
#: rule's place in ``invariants.INVARIANTS``, and the function and arguments that make it.
Found = tuple[int, int, Callable[..., Violation], tuple[Any, ...]]


def violation(found: Found) -> Violation:
    """The violation ``found`` stands for."""
    return found[2](*found[3])


def _as_is(v: Violation) -> Violation:
    return v


def found_as_is(v: Violation, index: int) -> Found:
    """``Found`` for a violation already made (of the rule at ``index``)."""
    return (v.seqs[-1], index, _as_is, (v,))


def _keyless_retry(
    job_id: str | None, seq: int, received: float, client: str, failed: EntryLike
) -> Violation:
    """``no_resubmission``'s violation for submit ``seq`` (of ``job_id``, at ``received``), a
    retry of the ``failed`` submit without its Idempotency-Key."""
    return Violation(
        "no_resubmission",
        job_id,
        (failed.seq, seq),
        f"submit #{seq} at {fmt_time(received)} retried failed submit"
        f" #{failed.seq} ({_answer(failed)}) without its Idempotency-Key"
        f" {failed.idempotency_key!r}",
        client,
    )


def _resubmission_of(
    job_id: str,
    origin: int,
    read: Held | None,
    seq: int,
    received: float,
    made_id: str | None,
    client: str,
) -> Violation:
    """``no_resubmission``'s violation for submit ``seq`` (at ``received``; the job it made,
    ``made_id``), sent for the request of ``job_id`` (made by submit ``origin``), which the
    client had not seen end; ``read``: a failed status read of that job it followed, if any.
    Made only for a violation that is shown (a load generator's POST loop finds one a
    submit)."""
    made = f"created job {made_id}" if made_id is not None else "was sent"
    if read is not None:
        message = (
            f"submit #{seq} at {fmt_time(received)} {made} for the same request"
            f" as job {job_id} after status read #{read[0]} of that job failed"
            f" ({_answer_of(read[3], read[4])}); a failed status read does not mean the"
            " job failed"
        )
        seqs: tuple[int, ...] = (origin, read[0], seq)
    else:
        message = (
            f"submit #{seq} at {fmt_time(received)} {made} for the same request"
            f" as job {job_id} (submit #{origin}), which the client had not seen end"
        )
        seqs = (origin, seq)
    return Violation("no_resubmission", job_id, seqs, message, client)


def _made(violations: list[Violation], index: int) -> list[Found]:
    return [(v.seqs[-1], index, _as_is, (v,)) for v in violations]


def _overlap(
    job_id: str, prev_seq: int, seq: int, received: float, prev_received: float, client: str
) -> Violation:
    return Violation(
        "no_overlap",
        job_id,
        (prev_seq, seq),
        f"status read #{seq} for job {job_id} arrived at"
        f" {fmt_time(received)} while read #{prev_seq} (received"
        f" {fmt_time(prev_received)}) had not started its response",
        client,
    )


def _too_soon(
    job_id: str,
    prev_seq: int,
    seq: int,
    received: float,
    gap: float,
    hint: float,
    tolerance: float,
    client: str,
) -> Violation:
    return Violation(
        "honours_poll_after",
        job_id,
        (prev_seq, seq),
        f"status read #{seq} for job {job_id} at"
        f" {fmt_time(received)} came {fmt_time(gap)} after"
        f" #{prev_seq} answered, sooner than its poll hint of"
        f" {fmt_time(hint)} (less {tolerance:.0%} tolerance)",
        client,
    )


def _ended(
    job_id: str, first: int, seq: int, received: float, status: str, at: float, client: str
) -> Violation:
    return Violation(
        "stops_at_terminal",
        job_id,
        (first, seq),
        f"status read #{seq} for job {job_id} at {fmt_time(received)} came after"
        f" #{first} had shown the job {status!r} at {fmt_time(at)}",
        client,
    )


def _makers(
    pair: tuple[str, tuple[tuple[int, str | None, str | None], ...]] | tuple[str, int, Any, Any],
) -> tuple[tuple[int, str | None, str | None], ...]:
    """The submits that made a request body's one open job (``ClientJudge._submitted``), from
    the pair of its id and them: ``(job_id, makers)``, or ``(job_id, seq, key, credential)``
    for the one submit that made it (most jobs: no tuple of one tuple each, kept for as long
    as the job is open)."""
    if len(pair) == 2:
        return pair[1]
    return (pair[1:],)


#: ``bounded_retries``' key of a group of attempts in ``ClientJudge.br_groups``: a submit's by
#: its request body's digest, any other kind's but a job's status reads and content fetches
#: (kept by the job: ``_Job.br_status``, ``br_content``) by the pair of the kind and the job's
#: id; no pair made for a submit nor dict entry for a job (a run of many jobs or clients).
_Group: TypeAlias = str | tuple[str, str | None]

#: ``bounded_retries``: a group with no attempt yet.
_NEW: list[int] = []


_FIRST = operator.itemgetter(0)


# -- status_rate ------------------------------------------------------------------------------


class StatusRate(Judge):
    """The client's status reads, all of them (``check`` of a list of entries); nothing when
    no ``status_rate`` budget is set. ``BoundedStatusRate`` keeps fewer."""

    __slots__ = ("limits", "reads")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.reads: list[Entry] = []

    def add(self, e: EntryLike) -> None:
        if e.kind == "status" and self.limits.status_rate is not None:
            self.reads.append(as_entry(e))  # (the in-memory check's: entries already)

    def close(self, hooks: Hooks) -> list[Violation]:
        return list(_RULES["status_rate"](self.reads, self.limits))


class Unjudgeable(Exception):
    """A judge that keeps little cannot judge these entries exactly (their clock readings go
    back too far): judge the journal as a whole instead."""


#: How many status reads let go ``BoundedStatusRate`` keeps (in arrays: 16 bytes each while
#: reads come in order, 24 after; at most about 4.3 MiB or 6.4 MiB a client) before it forgets the oldest half of them (a read reaching back past those is
#: ``Unjudgeable``: ``check`` then judges the file again keeping them all). Large enough that a
#: journal whose clock goes back by a few hundred thousand reads (phases of reads over every
#: job, one after the other) is judged in one pass, not two.
KEEP_GONE = 1 << 18


#: ``BoundedStatusRate``'s reads let go while there are none (never changed: replaced first).
_NO_GONE = (array.array("d"), array.array("q"), array.array("q"))


#: One int of each budget ``BoundedStatusRate`` holds (a run's clients all hold the same).
_ALLOWED: dict[int, int] = {}


class BoundedStatusRate(Judge):
    """The status reads received within two windows of the latest (the rule is reported once,
    at the first breach, so until then at most about twice the budget), sorted by when they
    were received; the reads let go, up to ``KEEP_GONE`` of them, as three numbers each in
    arrays (for a read whose clock reading is more than a window older than the latest).
    Raises ``Unjudgeable`` for a read whose window reaches back past the reads forgotten.
    While the reads come in order, the reads kept need no tuple each (``at`` and ``seqs``);
    those let go move into the arrays some 64 at a time, as the general path's do, all but
    their arrivals (``gone_index`` stays empty: they are the ones just before ``base``)."""

    __slots__ = (
        "allowed",
        "at",
        "base",
        "count",
        "done",
        "dropped",
        "forgotten",
        "gone_at",
        "gone_index",
        "gone_seq",
        "keep_gone",
        "limits",
        "lo",
        "ordered",
        "seqs",
        "times",
        "window",
    )

    def __init__(self, limits: Limits, *, keep_gone: int = KEEP_GONE) -> None:
        self.limits = limits
        self.keep_gone = keep_gone
        self.window = limits.status_rate_window
        rate = limits.status_rate
        allowed = 0 if rate is None else max(1, math.floor(rate * self.window + EPSILON))
        self.allowed = _ALLOWED.setdefault(allowed, allowed)  # (one int for every client's)
        self.at: list[float] = []  # when each read kept was received, sorted
        # (received at, arrival, seq), alike (shared and empty while reads come in order)
        self.times: list[tuple[float, int, int]] = _NO_LIST
        # while every read so far was received no earlier than the one before it (the usual
        # case), ``times`` stays empty: the reads kept are ``at`` and their seqs ``seqs``, the
        # first of them the ``base``-th read, and ``lo`` is where the latest read's window
        # starts in ``at`` (it only moves forward); the first read received earlier than the
        # one before it makes ``times`` of the reads kept, for good
        self.ordered = True
        self.seqs: list[int] = []
        self.base = 0
        self.lo = 0
        self.count = 0
        self.dropped = _NEG_INF  # the latest reading among the reads let go
        self.forgotten = _NEG_INF  # the latest reading among the reads forgotten
        # the reads let go, sorted by when they were received (all no later than ``at``'s)
        # (empty and shared until reads are let go: a judge per client of many)
        self.gone_at, self.gone_index, self.gone_seq = _NO_GONE
        self.done: Violation | None = None

    def add(self, e: _StatusRead) -> None:
        if e.kind != "status" or self.limits.status_rate is None or self.done is not None:
            return
        received = e.received_at
        start = received - self.window
        at = self.at
        if self.ordered:
            if (not at or at[-1] <= received) and start < received:
                # a read received no earlier than every read before it: exactly what the
                # general path does (nothing kept is later than it, no read let go is in
                # its window, and ``at`` stays sorted by appending)
                index = self.count
                self.count = index + 1
                seqs = self.seqs
                at.append(received)
                seqs.append(e.seq)
                lo = self.lo
                while at[lo] <= start:  # (it stops at this read: ``start < received``)
                    lo += 1
                self.lo = lo
                if len(at) - lo > self.allowed:
                    self._found(
                        e,
                        received,
                        list(
                            zip(at[lo:], range(self.base + lo, index + 1), seqs[lo:], strict=True)
                        ),
                    )
                    return
                if index & 63:
                    return
                # let go of the reads more than two windows older than this one, as the
                # general path does (looked at every 64th read): into the arrays
                keep = bisect.bisect_right(at, start - self.window)
                if keep > 64 and keep * 2 > len(at):
                    self.dropped = max(self.dropped, at[keep - 1])
                    self._let_go(at[:keep], None, seqs[:keep])
                    del at[:keep]
                    del seqs[:keep]
                    self.base += keep
                    self.lo = lo - keep
                return
            self._unorder()
        index = self.count
        self.count = index + 1
        times = self.times
        if start < self.dropped:
            if start < self.forgotten:
                raise Unjudgeable(f"status read #{e.seq} reaches back past the reads forgotten")
            if received < self.dropped:  # among the reads let go
                where = bisect.bisect_right(self.gone_at, received)
                self.gone_at.insert(where, received)
                self.gone_index.insert(where, index)
                self.gone_seq.insert(where, e.seq)
                received_gone = True
            else:
                received_gone = False
            gone = len(self.gone_at) - bisect.bisect_right(self.gone_at, start)
        else:
            received_gone = False
            gone = 0
        if received_gone:
            pass
        elif not at or at[-1] <= received:
            at.append(received)
            times.append((received, index, e.seq))
        else:
            where = bisect.bisect_right(at, received)
            at.insert(where, received)
            times.insert(where, (received, index, e.seq))
        above = bisect.bisect_right(at, start)
        if len(at) - above + gone > self.allowed:
            inside = times[above:]
            if gone:
                first_gone = len(self.gone_at) - gone
                inside.extend(
                    zip(
                        self.gone_at[first_gone:],
                        self.gone_index[first_gone:],
                        self.gone_seq[first_gone:],
                        strict=True,
                    )
                )
            inside.sort(key=_SECOND)
            self._found(e, received, inside)
            return
        # let go of the reads more than two windows older than this one (looked at every
        # 64th read: when they go changes what is kept, never the verdict)
        if index & 63:
            return
        keep = bisect.bisect_right(at, start - self.window)
        if keep > 64 and keep * 2 > len(at):
            self.dropped = max(self.dropped, at[keep - 1])
            kept = times[:keep]
            self._let_go(at[:keep], [index for _, index, _ in kept], [seq for _, _, seq in kept])
            del at[:keep]
            del times[:keep]

    def _let_go(self, at: list[float], index: list[int] | None, seqs: list[int]) -> None:
        """Append reads let go to the arrays (the latest ones so far; ``index`` None while
        reads come in order), then forget the oldest half of them when there are more than
        ``keep_gone``. (``fromlist`` converts an item in about a third of the time
        ``extend`` takes.)"""
        if self.gone_at is _NO_GONE[0]:
            self.gone_at = array.array("d")
            self.gone_index = array.array("q")
            self.gone_seq = array.array("q")
        self.gone_at.fromlist(at)
        self.gone_seq.fromlist(seqs)
        if index is not None:
            self.gone_index.fromlist(index)
        if len(self.gone_at) > self.keep_gone:
            half = len(self.gone_at) // 2
            self.forgotten = self.gone_at[half - 1]
            del self.gone_at[:half]
            del self.gone_seq[:half]
            if index is not None:
                del self.gone_index[:half]

    def _unorder(self) -> None:
        """Leave the lane for reads in order for good: ``times`` of the reads kept, and the
        arrival of each read let go (the ones just before ``base``)."""
        at, seqs, base = self.at, self.seqs, self.base
        if len(self.gone_at):
            self.gone_index = array.array("q", range(base - len(self.gone_at), base))
        self.times = [
            (received, base + offset, seq)
            for offset, (received, seq) in enumerate(zip(at, seqs, strict=True))
        ]
        self.seqs = []
        self.ordered = False

    def _found(self, e: _StatusRead, received: float, inside: list[tuple[float, int, int]]) -> None:
        """The violation at read ``e``: ``inside`` are the reads in its window (by arrival)."""
        first_received, _, first_seq = inside[0]
        self.done = Violation(
            "status_rate",
            None,
            tuple(seq for _, _, seq in inside),
            f"status read #{e.seq} at {fmt_time(received)} was read {len(inside)}"
            f" within {fmt_time(self.window)} (since #{first_seq} at"
            f" {fmt_time(first_received)}); the budget of"
            f" {self.limits.status_rate:g} per second allows {self.allowed}",
            e.client,
        )
        self.at, self.times, self.seqs = [], [], []
        self.gone_at, self.gone_index, self.gone_seq = _NO_GONE

    def close(self, hooks: Hooks) -> list[Violation]:
        return [] if self.done is None else [self.done]


class _Read(NamedTuple):
    """A status read as ``BoundedStatusRate`` reads it (a client's first: ``ClientJudge._rates``)."""

    kind: str
    received_at: float
    seq: int
    client: str


class _StatusRead(Protocol):
    """What ``BoundedStatusRate`` reads of an entry (an ``EntryLike``, or a ``_Read``)."""

    @property
    def kind(self) -> str: ...
    @property
    def received_at(self) -> float: ...
    @property
    def seq(self) -> int: ...
    @property
    def client(self) -> str: ...


def _SECOND(item: tuple[float, int, int]) -> int:
    return item[1]


_RULES = dict(CLIENT_RULES)


class _OneRule(Judge):
    """A ``ClientJudge`` that reports one rule's violations (what ``JUDGES`` makes)."""

    __slots__ = ("index", "judge")

    def __init__(self, limits: Limits, index: int) -> None:
        self.judge = ClientJudge(limits)
        self.index = index

    def add(self, e: EntryLike) -> None:
        self.judge.add(e)

    def close(self, hooks: Hooks) -> list[Violation]:
        return [violation(f) for f in self.judge.close_rules(hooks)[self.index]]


def _one_rule(index: int) -> Callable[[Limits], Judge]:
    return lambda limits: _OneRule(limits, index)


#: A judge of each per-client rule alone, in the order of ``CLIENT_RULES``.
JUDGES: tuple[tuple[str, Callable[[Limits], Judge]], ...] = tuple(
    (name, _one_rule(index)) for index, (name, _) in enumerate(CLIENT_RULES)
)
