"""Scenarios: YAML in, validated frozen objects out.

A scenario scripts a fake provider: the jobs it runs (a timeline of statuses per job), the
faults it injects on any route, its rate and concurrency limits, authentication, webhooks,
and the ``expect:`` defaults the invariant checker uses. ``load_scenario`` accepts a bundled
name, a path or YAML text; every problem is reported as ``file:line:col: path: message``.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml

from ._declarative import (
    INVALID,
    Bounds,
    Duration,
    NonNegativeInt,
    PositiveInt,
    convert,
    doc,
    format_path,
    json_schema,
    to_plain,
)
from ._suggest import did_you_mean
from ._yaml import YamlSyntaxError, load_located
from .errors import Problem, ScenarioError
from .http import RetryAfterForm

__all__ = [
    "TERMINAL_STATUSES",
    "Auth",
    "Concurrency",
    "Expect",
    "Fault",
    "JobError",
    "JobSpec",
    "RateLimit",
    "Result",
    "RetryAfter",
    "Scenario",
    "Step",
    "Webhooks",
    "bundled_scenarios",
    "load_scenario",
    "parse_scenario",
    "scenario_schema",
]

Status = Literal[
    "queued", "processing", "succeeded", "failed", "cancelled", "completed_with_errors"
]
Route = Literal["submit", "status", "content", "cancel", "list", "any"]
Outcome = Literal["succeeded", "failed", "cancelled", "timed_out", "completed_with_errors"]
Event = Literal[
    "job.queued",
    "job.processing",
    "job.succeeded",
    "job.failed",
    "job.cancelled",
    "job.completed_with_errors",
]
TERMINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled", "completed_with_errors"})
Progress = Annotated[int, Bounds(minimum=0, maximum=100)]
Fraction = Annotated[float, Bounds(minimum=0, maximum=1)]
#: The largest video the content route serves (the fake builds it in memory).
MAX_VIDEO_BYTES = 100_000_000
VideoSize = Annotated[int, Bounds(minimum=1, maximum=MAX_VIDEO_BYTES)]
#: The largest ``--time-scale`` factor (a time scale stretches every duration by it).
MAX_TIME_SCALE = 1000.0

_Issues = list[tuple[tuple[str | int, ...], str]]


@dataclass(frozen=True)
class Step:
    """One point on a job's timeline: from this moment on, the job shows this state."""

    status: Status | None = doc(
        "The status from this step on; omit to keep the previous one.", None
    )
    at: Duration | None = doc("When the step starts, measured from the submit (e.g. '93s').", None)
    after_polls: NonNegativeInt | None = doc(
        "Start the step once the client has made this many status reads of the job.", None
    )
    progress: Progress | None = doc("Progress percentage shown from this step on.", None)
    poll_after: Duration | None = doc(
        "Poll hint from this step on, until a later step sets another (overrides the job's).",
        None,
    )
    message: str | None = doc("The human message shown in status answers during this step.", None)

    def _check(self) -> _Issues:
        issues: _Issues = []
        if self.at is not None and self.after_polls is not None:
            issues.append(((), "a step starts either 'at' a time or 'after_polls' reads, not both"))
        if self.status is None and self.progress is None and self.message is None:
            issues.append(((), "a step must set 'status', 'progress' or 'message'"))
        return issues


@dataclass(frozen=True)
class Result:
    """What a succeeded job produced."""

    size_bytes: VideoSize = doc(
        "Size of the video served by the content route (at most 100,000,000 bytes).", 262_144
    )
    duration_seconds: float = doc("Length of the video, in seconds of playback.", 8.0)
    width: PositiveInt = doc("Frame width in pixels.", 1280)
    height: PositiveInt = doc("Frame height in pixels.", 720)
    url: str | None = doc("Result URL to show; default: the content route of the job.", None)


@dataclass(frozen=True)
class JobError:
    """Why a job failed (shown with status 'failed')."""

    code: str = doc("Machine-readable error code.", "generation_failed")
    message: str = doc("Human-readable explanation.", "The video could not be generated.")


@dataclass(frozen=True)
class JobSpec:
    """How one submitted job behaves."""

    timeline: tuple[Step, ...] = doc("Statuses over time; the first step defaults to 'at: 0s'.")
    name: str | None = doc("A label for this job in reports and 'explain'.", None)
    match: dict[str, Any] | None = doc(
        "Use this spec for submits whose body has these fields (strings may use * and ?).", None
    )
    poll_after: Duration | None = doc("Poll hint shown while the job is not terminal.", 5.0)
    estimated_duration: Duration | None = doc(
        "Estimate shown on submit; default: the timeline's end.", None
    )
    result: Result = doc(
        "The produced video (for 'succeeded' and 'completed_with_errors').", field_default=Result
    )
    error: JobError = doc("The error shown when the job fails.", field_default=JobError)
    summary: dict[str, Any] | None = doc(
        "Summary shown with 'completed_with_errors' (e.g. {succeeded: 3, failed: 1}).", None
    )

    def _check(self) -> _Issues:
        issues: _Issues = []
        if not self.timeline:
            return [(("timeline",), "a timeline needs at least one step")]
        terminal_seen: int | None = None
        last_at = 0.0
        last_polls = 0
        current = None
        for index, step in enumerate(self.timeline):
            where = ("timeline", index)
            if terminal_seen is not None:
                issues.append(
                    (
                        where,
                        f"nothing can follow the terminal status {current!r} of step {terminal_seen}",
                    )
                )
                break
            if index == 0 and step.status is None:
                issues.append(((*where, "status"), "the first step must set a status"))
            if step.at is not None:
                if step.at < last_at:
                    issues.append(
                        (
                            (*where, "at"),
                            f"times must not go backwards: {_fmt(step.at)} comes after {_fmt(last_at)}",
                        )
                    )
                last_at = max(last_at, step.at)
            if step.after_polls is not None:
                if step.after_polls < last_polls:
                    issues.append(
                        (
                            (*where, "after_polls"),
                            f"poll counts must not go backwards: {step.after_polls} comes after"
                            f" {last_polls}",
                        )
                    )
                last_polls = max(last_polls, step.after_polls)
            if step.status is not None:
                current = step.status
            if current in TERMINAL_STATUSES:
                terminal_seen = index
        if current == "completed_with_errors" and self.summary is None:
            issues.append((("summary",), "a job that ends 'completed_with_errors' needs a summary"))
        return issues

    @property
    def final_status(self) -> str:
        return [s.status for s in self.timeline if s.status is not None][-1]

    @property
    def end_time(self) -> float | None:
        """When the timeline reaches its last step, if every step is timed (None otherwise)."""
        if any(s.after_polls is not None for s in self.timeline):
            return None
        return max((s.at or 0.0) for s in self.timeline)


@dataclass(frozen=True)
class RetryAfter:
    """A ``Retry-After`` to send: the wait, and the form it is written in."""

    delay: Duration | None = doc(
        "How long the client must wait before its next request (required unless 'raw' is given).",
        None,
    )
    form: RetryAfterForm = doc(
        "'seconds' (delay-seconds), 'imf', 'rfc850' or 'asctime' (the three RFC 9110 HTTP-date "
        "forms), or 'ms' (a 'retry-after-ms' header).",
        "seconds",
    )
    raw: str | None = doc("Send this exact header value instead (e.g. a malformed one).", None)

    def _check(self) -> _Issues:
        if self.delay is None and self.raw is None:
            return [
                (
                    ("delay",),
                    "missing required key 'delay' (a duration such as '250ms', '7s' or '2m'); "
                    "only a 'raw' header value goes without one",
                )
            ]
        return []

    @property
    def wait(self) -> float:
        """The delay in seconds (0 for a ``raw`` value, whose meaning is the client's to parse)."""
        return self.delay if self.delay is not None else 0.0


@dataclass(frozen=True)
class Fault:
    """A scripted misbehaviour on some requests of some route."""

    name: str = doc("Name recorded in the journal's 'fault' field.")
    route: Route = doc("Which requests: submit, status, content, cancel, list or any.", "any")
    job: NonNegativeInt | None = doc("Only requests about jobs made from jobs[job].", None)
    nth: PositiveInt | tuple[PositiveInt, ...] | None = doc(
        "Fire on the nth matching request (1-based), or on each listed one.", None
    )
    every: PositiveInt | None = doc("Fire on every k-th matching request.", None)
    start: Duration | None = doc("Fire only from this time on (since the scenario started).", None)
    end: Duration | None = doc("Fire only before this time (since the scenario started).", None)
    probability: float | None = doc("Fire with this seeded probability (0 to 1).", None)
    times: PositiveInt | None = doc("Fire at most this many times in all.", None)
    status: int | None = doc("Answer with this HTTP status instead of the normal answer.", None)
    headers: dict[str, str] = doc("Headers to add to the answer.", field_default=dict)
    body: Any = doc("Body of the scripted answer (JSON value; default: an error object).", None)
    retry_after: Duration | RetryAfter | None = doc("A Retry-After to send with the answer.", None)
    delay: Duration = doc("Wait this long before the response starts (a slow answer).", 0.0)
    action: Literal["respond", "reset", "lose_response"] = doc(
        "'respond'; 'reset' drops the connection without handling the request; 'lose_response'"
        " handles the request (a submit creates its job) and then drops the connection.",
        "respond",
    )

    def _check(self) -> _Issues:
        issues: _Issues = []
        if self.probability is not None and not 0 <= self.probability <= 1:
            issues.append(
                (("probability",), f"expected a number between 0 and 1, got {self.probability!r}")
            )
        if self.status is not None and not 100 <= self.status <= 599:
            issues.append(
                (("status",), f"expected an HTTP status between 100 and 599, got {self.status}")
            )
        if self.start is not None and self.end is not None and self.end <= self.start:
            issues.append(
                (
                    ("end",),
                    f"the window ends ({_fmt(self.end)}) before it starts ({_fmt(self.start)})",
                )
            )
        if self.action != "respond" and (self.status is not None or self.body is not None):
            issues.append(
                (
                    ("action",),
                    f"action {self.action!r} sends no answer, so 'status' and 'body' cannot be set",
                )
            )
        if (
            self.action == "respond"
            and self.status is None
            and not self.delay
            and not self.headers
            and self.retry_after is None
        ):
            issues.append(
                (
                    (),
                    "a fault must change something: set 'status', 'delay', 'headers', 'retry_after' or 'action'",
                )
            )
        return issues

    @property
    def nth_set(self) -> frozenset[int]:
        if self.nth is None:
            return frozenset()
        return frozenset(self.nth) if isinstance(self.nth, tuple) else frozenset({self.nth})

    @property
    def retry(self) -> RetryAfter | None:
        if self.retry_after is None or isinstance(self.retry_after, RetryAfter):
            return self.retry_after
        return RetryAfter(delay=self.retry_after)


@dataclass(frozen=True)
class RateLimit:
    """A token bucket per API key; an empty bucket answers 429 with a computed Retry-After."""

    capacity: PositiveInt = doc("Burst size: requests allowed at once.")
    refill_every: Duration = doc("One token comes back every this long.")
    routes: tuple[Route, ...] = doc("Routes that spend tokens.", ("any",))
    scope: Literal["key", "global"] = doc(
        "One bucket per API key (or client), or one for all.", "key"
    )
    retry_after_form: RetryAfterForm = doc("How the computed Retry-After is written.", "seconds")

    def _check(self) -> _Issues:
        if self.refill_every <= 0:
            return [(("refill_every",), "a token must take longer than 0s to come back")]
        return []


@dataclass(frozen=True)
class Concurrency:
    """A cap on jobs running at once for the account; over it, submits get 429 (in the `runway`
    dialect they are accepted and shown THROTTLED until a slot frees, as Runway does)."""

    max_active_jobs: PositiveInt = doc("Non-terminal jobs allowed at once.")
    retry_after: Duration | RetryAfter = doc("Retry-After sent with the 429.", 10.0)


@dataclass(frozen=True)
class Auth:
    """Bearer tokens the fake accepts, and when they stop working."""

    tokens: tuple[str, ...] = doc("Accepted tokens ('Authorization: Bearer <token>').")
    revoke_after: PositiveInt | None = doc("Revoke a token after it made this many requests.", None)

    def _check(self) -> _Issues:
        if not self.tokens:
            return [(("tokens",), "list at least one token: with none, every request gets a 401")]
        return []


@dataclass(frozen=True)
class Webhooks:
    """Webhook deliveries: which events, where, when, and how they misbehave.

    Each state change of a job whose event is listed becomes one message (one ``webhook-id``)
    POSTed to the job's ``callback_url`` (else ``url``) ``delay`` after the change, signed per
    Standard Webhooks. Extra sends of the same message follow it ``duplicate_gap`` apart:
    the duplicates, then the forged copy, then the stale replay.
    """

    url: str | None = doc("Receiver URL for jobs whose submit carries no callback_url.", None)
    secret: str = doc(
        "Signing secret: 'whsec_' + base64 of 24 to 64 random bytes.",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    )
    events: tuple[Event, ...] = doc(
        "Events to send (job.queued, job.processing, job.succeeded, job.failed, job.cancelled,"
        " job.completed_with_errors).",
        ("job.succeeded", "job.failed", "job.cancelled", "job.completed_with_errors"),
    )
    delay: Duration = doc("Time between the state change and the first send of its message.", 0.0)
    duplicates: NonNegativeInt = doc(
        "Extra sends of every message: same webhook-id and body, fresh timestamp and signature.", 0
    )
    duplicate_gap: Duration = doc(
        "Time between the sends of one message (duplicates, forged, stale).", 1.0
    )
    reorder: bool = doc(
        "Hold each job's earlier events back and send them after its terminal event.", False
    )
    forged: tuple[Event, ...] = doc(
        "Events whose message is also sent once with a bad signature (same webhook-id).", ()
    )
    stale: tuple[Event, ...] = doc(
        "Events whose message is also replayed once with a timestamp 10 minutes old.", ()
    )
    missing: tuple[Event, ...] = doc(
        "Events never sent although the job changes state (the client must notice by polling).", ()
    )
    max_attempts: PositiveInt = doc(
        "Attempts per send while the receiver answers 429, 5xx or times out.", 5
    )
    retry_schedule: tuple[Duration, ...] = doc(
        "Waits before the 2nd, 3rd... attempt; the last one repeats and caps the backoff; each"
        " wait is jittered down by up to 25% (seeded).",
        (5.0, 30.0, 120.0, 600.0),
    )
    timeout: Duration = doc(
        "Give up on a receiver's answer after this long (then retry); not time-scaled.",
        10.0,
        scaled=False,
    )

    def _check(self) -> _Issues:
        issues: _Issues = []
        problem = secret_problem(self.secret)
        if problem is not None:
            issues.append((("secret",), problem))
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            issues.append((("url",), f"expected an http:// or https:// URL, got {self.url!r}"))
        if not self.retry_schedule:
            issues.append((("retry_schedule",), "the retry schedule needs at least one wait"))
        if self.timeout <= 0:
            issues.append((("timeout",), "the timeout must be longer than 0s"))
        for name in ("forged", "stale", "missing"):
            for index, event in enumerate(getattr(self, name)):
                if event not in self.events:
                    issues.append(
                        (
                            (name, index),
                            f"{event!r} is not among the events sent; add it to 'events'",
                        )
                    )
        for index, event in enumerate(self.missing):
            if event in self.forged or event in self.stale:
                issues.append(
                    (
                        ("missing", index),
                        f"{event!r} is missing, so it cannot also be forged or stale",
                    )
                )
        return issues


def secret_problem(secret: str) -> str | None:
    """Why ``secret`` is not a Standard Webhooks secret, or None when it is one."""
    if not secret.startswith("whsec_"):
        return "expected a secret starting with 'whsec_'"
    try:
        text = secret[len("whsec_") :].rstrip("=")
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return "expected base64 after 'whsec_'"
    if not 24 <= len(key) <= 64:
        return f"expected 24 to 64 bytes of key after 'whsec_', got {len(key)}"
    return None


@dataclass(frozen=True)
class Expect:
    """Defaults for the invariant checker and the expected outcome."""

    outcome: Outcome | None = doc("What a correct client should report for the first job.", None)
    deadline: Duration | None = doc("The client's deadline for a job, from its submit.", None)
    max_retries: NonNegativeInt = doc("Consecutive failed attempts allowed per job and route.", 5)
    retrievals: NonNegativeInt | None = doc(
        "Content fetches expected per job that ended with a video (succeeded or completed_with_errors; e.g. 1).",
        None,
    )
    poll_tolerance: Fraction = doc("Fraction of the poll hint a poll may come early by.", 0.1)
    status_rate: float | None = doc("Budget of status reads per second across jobs (opt-in).", None)
    ack_limit: Duration = doc(
        "How fast a webhook receiver must answer; not time-scaled (a receiver's speed is its own).",
        5.0,
        scaled=False,
    )

    def _check(self) -> _Issues:
        issues: _Issues = []
        if self.deadline is not None and self.deadline <= 0:
            issues.append((("deadline",), "a deadline must be longer than 0s"))
        if self.status_rate is not None and self.status_rate <= 0:
            issues.append(
                (("status_rate",), f"expected a number greater than 0, got {self.status_rate!r}")
            )
        return issues


#: The wire dialects, one ``fakeprovider.dialects`` class each.
DialectName = Literal[
    "generic",
    "openai-videos",
    "runway",
    "replicate",
    "fal",
    "google-veo",
    "gemini",
    "luma",
    "ark",
    "dashscope",
]
DIALECT_NAMES: tuple[str, ...] = get_args(DialectName)


@dataclass(frozen=True)
class Scenario:
    """A scripted fake provider."""

    jobs: tuple[JobSpec, ...] = doc("How submitted jobs behave, in order (the last one repeats).")
    name: str = doc("Scenario name.", "unnamed")
    description: str = doc("One line saying what the scenario tests.", "")
    dialect: DialectName = doc("Wire dialect: the provider API the fake speaks.", "generic")
    seed: int = doc("Seed for probabilities and ids.", 0)
    faults: tuple[Fault, ...] = doc("Scripted misbehaviour.", ())
    rate_limit: RateLimit | None = doc("Token-bucket rate limit.", None)
    concurrency: Concurrency | None = doc("Cap on active jobs.", None)
    auth: Auth | None = doc("Accepted tokens; without it, any or no token is accepted.", None)
    webhooks: Webhooks | None = doc("Webhook deliveries.", None)
    expect: Expect = doc("Defaults for the invariant checker.", field_default=Expect)
    max_body_bytes: PositiveInt = doc("Larger request bodies get 413.", 1_048_576)

    def _check(self) -> _Issues:
        issues: _Issues = []
        if not self.jobs:
            issues.append((("jobs",), "a scenario needs at least one job"))
        for index, fault in enumerate(self.faults):
            if fault.job is not None and fault.job >= len(self.jobs):
                issues.append(
                    (
                        ("faults", index, "job"),
                        f"there is no jobs[{fault.job}]: the scenario has {len(self.jobs)} job(s)",
                    )
                )
        issues.extend(self._outcome_issues())
        names = [f.name for f in self.faults]
        for index, name in enumerate(names):
            if name in names[:index]:
                issues.append((("faults", index, "name"), f"fault name {name!r} is used twice"))
        return issues

    def _outcome_issues(self) -> _Issues:
        """``expect.outcome`` against what the first job's timeline says a correct client
        reports, where the timeline decides it: a timed timeline that ends (or not) before the
        deadline. A client's own cancel, faults and revoked tokens are not modelled, so
        'cancelled' and 'failed' expectations are left alone."""
        outcome = self.expect.outcome
        if outcome is None or outcome in ("cancelled", "failed") or not self.jobs:
            return []
        spec = self.jobs[0]
        end = spec.end_time
        if end is None:
            return []  # driven by poll counts: when it ends is the client's doing
        final = spec.final_status
        deadline = self.expect.deadline
        if deadline is not None and end > deadline:
            derived, why = (
                "timed_out",
                f"ends at {_fmt(end)}, after the deadline of {_fmt(deadline)}",
            )
        elif final not in TERMINAL_STATUSES:
            derived, why = "timed_out", f"never ends (it stays {final!r})"
        else:
            derived, why = final, f"ends {final!r} at {_fmt(end)}"
        if derived == outcome:
            return []
        return [
            (
                ("expect", "outcome"),
                f"the first job's timeline {why}, so a correct client reports {derived!r}, not"
                f" {outcome!r}; change expect.outcome or the timeline",
            )
        ]

    # -- derived ---------------------------------------------------------------------------

    def scaled(self, factor: float) -> Scenario:
        """Every duration multiplied by ``factor`` (``--time-scale``); counts are unchanged."""
        check_time_scale(factor)
        return _scale(self, factor)  # type: ignore[no-any-return]

    def to_yaml(self) -> str:
        """This scenario as YAML that loads back to an equal scenario."""
        plain = to_plain(self)
        return yaml.safe_dump(plain, sort_keys=False, allow_unicode=True, width=100)

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)  # type: ignore[no-any-return]


def check_time_scale(factor: float) -> None:
    """``ValueError`` unless ``factor`` is a time scale: greater than 0, at most 1000."""
    if not 0 < factor <= MAX_TIME_SCALE:
        raise ValueError(
            f"time scale must be a number greater than 0 and at most {MAX_TIME_SCALE:g},"
            f" got {factor!r}"
        )


def _fmt(seconds: float) -> str:
    from .durations import format_duration

    return format_duration(seconds)


def _scale(obj: Any, factor: float) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        from typing import get_type_hints

        hints = get_type_hints(type(obj), include_extras=True)
        changes = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.metadata.get("scaled", True):
                changes[f.name] = _scale_value(hints[f.name], value, factor)
        return dataclasses.replace(obj, **changes)
    return obj


def _scale_value(tp: Any, value: Any, factor: float) -> Any:
    from typing import get_args

    from ._declarative import DURATION

    if value is None:
        return None
    text = repr(tp)
    if isinstance(value, float) and (DURATION in get_args(tp) or "_DurationMarker" in text):
        return value * factor
    if isinstance(value, tuple):
        args = get_args(tp)
        item_tp = args[0] if args else Any
        # tuple inside a union (``nth``) holds counts, never durations
        return tuple(_scale_value(item_tp, v, factor) for v in value)
    if dataclasses.is_dataclass(value):
        return _scale(value, factor)
    return value


# --- loading -------------------------------------------------------------------------------

_BUNDLED_DIRS = ("_bundled",)


def _bundled_dir() -> Path:
    packaged = resources.files("fakeprovider") / "_bundled"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "scenarios"


def bundled_scenarios() -> dict[str, Path]:
    """Names of the bundled scenarios and their files, sorted by name."""
    folder = _bundled_dir()
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def load_scenario(source: str | Path, *, time_scale: float = 1.0) -> Scenario:
    """Load a scenario from a bundled name, a file path, or YAML text.

    Raises ``ScenarioError`` listing every problem as ``file:line:col: path: message``.
    """
    if isinstance(source, Path):
        text, label = _read(source), str(source)
    elif "\n" in source or source.lstrip().startswith("{"):
        text, label = source, "<string>"
    elif source in bundled_scenarios():
        path = bundled_scenarios()[source]
        text, label = path.read_text(encoding="utf-8"), f"<bundled>/{path.name}"
    elif Path(source).exists():
        text, label = _read(Path(source)), source
    else:
        names = ", ".join(bundled_scenarios())
        hint = did_you_mean(source, bundled_scenarios())
        raise ScenarioError(
            [
                Problem(
                    source,
                    0,
                    0,
                    "",
                    f"no such file and no bundled scenario named {source!r}{hint};"
                    f" bundled: {names}",
                )
            ]
        )
    scenario = parse_scenario(text, filename=label)
    return scenario if time_scale == 1.0 else scenario.scaled(time_scale)


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(
            [Problem(str(path), 0, 0, "", f"cannot read the file: {exc.strerror or exc}")]
        ) from None
    return decode(data, str(path))


def decode(data: bytes, filename: str) -> str:
    """``data`` as UTF-8 text, or ``ScenarioError`` naming the first byte that is not (its
    line, column and byte offset)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        raise ScenarioError(
            [
                Problem(
                    filename,
                    line,
                    column,
                    "",
                    f"not UTF-8 text: byte 0x{data[exc.start]:02x} at byte offset {exc.start}"
                    " cannot be decoded; save the file as UTF-8",
                )
            ]
        ) from None


def parse_scenario(text: str, *, filename: str = "<string>") -> Scenario:
    """Validate YAML ``text`` as a scenario; ``filename`` is used in error messages."""
    try:
        value, positions = load_located(text)
    except YamlSyntaxError as exc:
        raise ScenarioError([Problem(filename, exc.line, exc.column, "", exc.message)]) from None
    if not isinstance(value, dict):
        line, column = positions.get((), (1, 1))
        got = "an empty document" if value is None else "a " + type(value).__name__
        raise ScenarioError(
            [
                Problem(
                    filename, line, column, "", f"expected a mapping with a 'jobs' key, got {got}"
                )
            ]
        )
    issues: list[tuple[tuple[str | int, ...], str]] = []
    scenario = convert(Scenario, value, (), issues)
    if scenario is INVALID or issues:
        problems = []
        for path, message in issues:
            line, column = _locate(positions, path)
            shown = tuple(p for p in path if p != "<key>")
            problems.append(Problem(filename, line, column, format_path(shown), message))
        problems.sort(key=lambda p: (p.line, p.column))
        raise ScenarioError(problems)
    return scenario  # type: ignore[no-any-return]


def _locate(
    positions: dict[tuple[str | int, ...], tuple[int, int]], path: tuple[str | int, ...]
) -> tuple[int, int]:
    probe = path
    while probe not in positions and probe:
        probe = probe[:-1]
    return positions.get(probe, (1, 1))


#: The schema's ``$id``: a name, not a location (nothing is ever fetched from it; editors read
#: the file they are pointed at). The number changes only when the format changes incompatibly.
SCHEMA_ID = "urn:fakeprovider:scenario:1"


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of the scenario format (also shipped as ``scenario.schema.json``)."""
    return json_schema(Scenario, title="fakeprovider scenario", schema_id=SCHEMA_ID)


def dump_schema() -> str:
    return json.dumps(scenario_schema(), indent=2) + "\n"
