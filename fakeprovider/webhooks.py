"""Webhooks, the pure part: Standard Webhooks signing, and planning deliveries from state changes.

Signing follows Standard Webhooks v1 exactly as its reference library ``standardwebhooks``
does: the signed content is ``{webhook-id}.{webhook-timestamp}.{body}`` over the exact bytes
sent, the key is the base64 decoding of the secret after ``whsec_``, the signature is
``v1,`` + base64(HMAC-SHA256), and the timestamp is integer Unix seconds.

Planning turns the engine's state changes into ``Delivery`` records (one per send: the
message itself, its duplicates, a forged copy, a stale replay) as a pure function of the
scenario's ``webhooks:`` block, the changes, the seed and the dialect's ``WebhookShape`` (which
events the provider sends at all, and whether it signs them). What one send looks like on the
wire (``WebhookMessage``: body and headers) is the dialect's ``webhook_message(Outgoing)``;
``signed_message`` and ``unsigned_message`` are the two ways of wrapping a payload. The sending
lives in ``dispatcher``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from .messages import JobView, StateChange
from .scenario import TERMINAL_STATUSES, Webhooks

__all__ = [
    "STALE_AGE",
    "TOLERANCE",
    "Delivery",
    "Outgoing",
    "PayloadBuilder",
    "Variant",
    "WebhookMessage",
    "WebhookShape",
    "backoff",
    "event_for",
    "is_allowed_target",
    "json_body",
    "plan",
    "plan_change",
    "render_body",
    "secret_key",
    "sign",
    "signed_headers",
    "signed_message",
    "unsigned_message",
    "verify",
    "webhook_id",
]

#: How far a receiver may trust a timestamp (Standard Webhooks recommends 5 minutes).
TOLERANCE = 300.0
#: How old a stale replay's ``webhook-timestamp`` is (never scaled by ``--time-scale``).
STALE_AGE = 600.0

#: What a send is: None for the message itself, else what makes it special.
Variant = Literal["duplicate", "reordered", "forged", "stale", "missing"] | None

#: Builds a webhook body from (event type, the job at the change, ISO 8601 timestamp).
PayloadBuilder = Callable[[str, JobView, str], Mapping[str, Any]]


# --- signing -------------------------------------------------------------------------------


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret (its base64 part decoded, as the reference does)."""
    text = secret.removeprefix("whsec_")
    return base64.b64decode(text + "==")


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value (``v1,<base64>``) for one send."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers for one send."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, msg_id, timestamp, body),
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    tolerance: float = TOLERANCE,
) -> bool:
    """True when ``headers`` carry a valid v1 signature of ``body`` within ``tolerance`` of ``now``.

    ``now`` is Unix time. Header names are matched case-insensitively; any one of several
    space-separated signatures may match, as the specification requires.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    msg_id = lowered.get("webhook-id")
    stamp = lowered.get("webhook-timestamp")
    signatures = lowered.get("webhook-signature")
    if not (msg_id and stamp and signatures) or not stamp.isdigit():
        return False
    timestamp = int(stamp)
    if abs(now - timestamp) > tolerance:
        return False
    expected = sign(secret, msg_id, timestamp, body).encode()
    return any(
        candidate.startswith("v1,") and hmac.compare_digest(candidate.encode(), expected)
        for candidate in signatures.split(" ")
    )


def _forged_secret(secret: str) -> str:
    """A well-formed secret that is not ``secret``: what an attacker would sign with."""
    key = hashlib.sha256(b"fakeprovider forged:" + secret_key(secret)).digest()[:24]
    return "whsec_" + base64.b64encode(key).decode("ascii")


def headers_for(
    secret: str, msg_id: str, unix_now: float, body: bytes, variant: Variant
) -> dict[str, str]:
    """The headers of one send: forged ones are signed with the wrong key, stale ones are old."""
    timestamp = math.floor(unix_now)
    if variant == "stale":
        timestamp -= int(STALE_AGE)
    key = _forged_secret(secret) if variant == "forged" else secret
    return signed_headers(key, msg_id, timestamp, body)


# --- bodies --------------------------------------------------------------------------------


def event_for(status: str) -> str:
    """The event type announcing that a job entered ``status`` (``job.succeeded``)."""
    return f"job.{status}"


def iso_timestamp(unix: float) -> str:
    """``unix`` as ISO 8601 in UTC with milliseconds (``2026-01-01T00:01:33.000Z``)."""
    moment = datetime.fromtimestamp(unix, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_body(payload: Mapping[str, Any]) -> bytes:
    """``payload`` as the compact UTF-8 JSON every dialect sends."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def render_body(build: PayloadBuilder, delivery: Delivery, epoch: float) -> bytes:
    """The exact bytes sent for ``delivery`` (the same for every send of one message)."""
    return json_body(build(delivery.event, delivery.job, iso_timestamp(epoch + delivery.change_at)))


# --- what goes on the wire -----------------------------------------------------------------


@dataclass(frozen=True)
class WebhookMessage:
    """One send as it goes on the wire: the exact body bytes and the headers."""

    body: bytes
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Outgoing:
    """What a dialect needs to shape one send of ``delivery`` (see ``Dialect.webhook_message``).

    ``sent_at`` is the Unix time the send starts (the ``webhook-timestamp`` of a fresh send);
    ``epoch`` is the Unix time of clock reading 0 (``epoch + delivery.change_at`` is when the
    change happened); ``base_url`` is the fake's own address, for links in the body.
    """

    delivery: Delivery
    secret: str
    sent_at: float
    epoch: float
    base_url: str

    @property
    def changed_at(self) -> float:
        """Unix time of the state change the message announces (the same on every send)."""
        return self.epoch + self.delivery.change_at


def signed_message(payload: Mapping[str, Any], send: Outgoing) -> WebhookMessage:
    """``payload`` signed per Standard Webhooks (forged sends with a wrong key, stale ones old)."""
    body = json_body(payload)
    delivery = send.delivery
    headers = headers_for(send.secret, delivery.webhook_id, send.sent_at, body, delivery.variant)
    return WebhookMessage(body, {**headers, "content-type": "application/json"})


def unsigned_message(
    payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> WebhookMessage:
    """``payload`` with no signature at all (for providers that do not sign)."""
    return WebhookMessage(
        json_body(payload), {**(headers or {}), "content-type": "application/json"}
    )


class WebhookShape(Protocol):
    """What planning asks a dialect: which events its provider sends, and whether it signs."""

    #: False when the provider does not sign: forged and stale sends then cannot exist.
    webhook_signed: bool

    def webhook_event(self, event: str, job: JobView) -> str | None:
        """The provider's name for ``event`` (``job.succeeded``...), None when it sends none."""
        ...


# --- planning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    """One planned send of a webhook message, due at clock reading ``at``."""

    job_id: str
    event: str
    webhook_id: str
    url: str
    at: float
    change_at: float
    job: JobView
    variant: Variant = None


def webhook_id(seed: int, job_id: str, event: str) -> str:
    """The deterministic ``webhook-id`` of the message announcing ``event`` for ``job_id``."""
    digest = hashlib.sha256(f"{seed}:{job_id}:{event}".encode()).hexdigest()
    return f"msg_{digest[:24]}"


def _sends(
    config: Webhooks, event: str, first: float, variant: Variant, signed: bool
) -> list[tuple[float, Variant]]:
    """The sends of one message from ``first`` on: itself, duplicates, forged copy, stale replay
    (the last two only when the provider signs: there is no signature to forge otherwise)."""
    kinds: list[Variant] = [variant]
    kinds += ["duplicate"] * config.duplicates
    if signed and event in config.forged:
        kinds.append("forged")
    if signed and event in config.stale:
        kinds.append("stale")
    return [(first + index * config.duplicate_gap, kind) for index, kind in enumerate(kinds)]


def plan_change(
    config: Webhooks,
    change: StateChange,
    earlier: Sequence[StateChange],
    *,
    seed: int,
    shape: WebhookShape | None = None,
) -> list[Delivery]:
    """The sends caused by ``change``, given the ``earlier`` changes of the same job.

    A missing event yields one ``variant='missing'`` record (journalled, never sent). With
    ``reorder``, non-terminal events yield nothing until the terminal change, which yields its
    own sends first and then the held-back messages (``variant='reordered'``). ``shape`` (the
    dialect) drops the events its provider does not send and, when it does not sign, the
    forged and stale sends; without it every listed event is sent, signed.
    """
    job = change.job
    if job is None:
        return []
    url = job.callback_url or config.url
    event = event_for(change.status)
    signed = shape is None or shape.webhook_signed

    def wanted(ev: str, source: StateChange) -> bool:
        if ev not in config.events or source.job is None:
            return False
        return shape is None or shape.webhook_event(ev, source.job) is not None

    if url is None or not wanted(event, change):
        return []

    def delivery(ev: str, source: StateChange, at: float, variant: Variant) -> Delivery:
        assert source.job is not None
        return Delivery(
            job_id=source.job_id,
            event=ev,
            webhook_id=webhook_id(seed, source.job_id, ev),
            url=url,
            at=at,
            change_at=source.at,
            job=source.job,
            variant=variant,
        )

    first = change.at + config.delay
    if event in config.missing:
        return [delivery(event, change, first, "missing")]
    terminal = change.status in TERMINAL_STATUSES
    if config.reorder and not terminal:
        return []
    sends = _sends(config, event, first, None, signed)
    out = [delivery(event, change, at, kind) for at, kind in sends]
    if config.reorder:
        slot = first + len(out) * config.duplicate_gap
        for held in earlier:
            held_event = event_for(held.status)
            if not wanted(held_event, held) or held_event in config.missing:
                continue
            sends = _sends(config, held_event, slot, "reordered", signed)
            out += [delivery(held_event, held, at, kind) for at, kind in sends]
            slot += len(sends) * config.duplicate_gap
    return out


def plan(
    config: Webhooks,
    changes: Iterable[StateChange],
    *,
    seed: int,
    shape: WebhookShape | None = None,
) -> list[Delivery]:
    """Every send caused by ``changes``, in due order (ties keep planning order)."""
    history: dict[str, list[StateChange]] = {}
    out: list[Delivery] = []
    for change in changes:
        earlier = history.setdefault(change.job_id, [])
        out += plan_change(config, change, earlier, seed=seed, shape=shape)
        earlier.append(change)
    return sorted(out, key=lambda d: d.at)


def backoff(config: Webhooks, attempt: int, *, seed: int, msg_id: str, variant: Variant) -> float:
    """The wait before attempt ``attempt + 1``: the schedule's entry, jittered down by up to 25%.

    The last entry of ``retry_schedule`` repeats, so it is also the cap. The jitter is drawn
    from the scenario seed, so a run can be replayed exactly.
    """
    schedule = config.retry_schedule
    base = schedule[min(attempt - 1, len(schedule) - 1)]
    draw = random.Random(f"{seed}:{msg_id}:{variant}:{attempt}").random()
    return base * (1.0 - 0.25 * draw)


# --- safety --------------------------------------------------------------------------------


def is_allowed_target(url: str, allowed_hosts: Iterable[str] = ()) -> bool:
    """True for an http(s) ``url`` to a loopback address, ``localhost`` or an allowed host."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    if host.lower() in {h.lower() for h in allowed_hosts}:
        return True
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
