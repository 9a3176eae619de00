"""Webhooks, the pure part: Standard Webhooks signing, delivery planning, scenario syntax."""

from __future__ import annotations

import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from fakeprovider.clock import DEFAULT_EPOCH
from fakeprovider.dialects.generic import generic_payload
from fakeprovider.engine import Engine
from fakeprovider.errors import ScenarioError
from fakeprovider.messages import Request, StateChange
from fakeprovider.scenario import Webhooks, bundled_scenarios, load_scenario, parse_scenario
from fakeprovider.webhooks import (
    backoff,
    headers_for,
    is_allowed_target,
    plan,
    render_body,
    sign,
    signed_headers,
    verify,
    webhook_id,
)

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_the_specifications_published_test_vector_reproduces():
    # standard-webhooks libraries/python/tests/test_webhooks.py::test_sign_function
    signature = sign(SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_signatures_match_the_reference_library_byte_for_byte():
    body = '{"type":"job.succeeded","data":{"prompt":"caf\u00e9 \u2615"}}'
    reference = Webhook(SECRET).sign("msg_1", _utc(1767225600), body)
    assert sign(SECRET, "msg_1", 1767225600, body.encode()) == reference


def _utc(seconds: int):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, tz=UTC)


def _engine_changes(text: str, *, until: float) -> tuple[Engine, list[StateChange]]:
    engine = Engine(parse_scenario(text), epoch=DEFAULT_EPOCH)
    engine.handle(
        Request(
            "submit",
            "POST",
            "/v1/jobs",
            body={"prompt": "a cat"},
            callback_url="http://127.0.0.1:9/h",
        ),
        0.0,
    )
    engine.advance_all(until)
    return engine, list(engine.changes)


JOB = """
jobs:
  - timeline:
      - status: queued
      - {at: 4s, status: processing}
      - {at: 93s, status: succeeded}
webhooks:
  events: [job.queued, job.processing, job.succeeded]
  delay: 500ms
  duplicates: 1
  duplicate_gap: 2s
  forged: [job.succeeded]
  stale: [job.succeeded]
  missing: [job.processing]
"""


def test_real_deliveries_verify_with_the_reference_library_and_bad_ones_do_not():
    _, changes = _engine_changes(JOB, until=100.0)
    config = parse_scenario(JOB).webhooks
    assert config is not None
    sends = [d for d in plan(config, changes, seed=0) if d.event == "job.succeeded"]
    now = time.time()
    verdicts = []
    for delivery in sends:
        body = render_body(generic_payload, delivery, DEFAULT_EPOCH)
        headers = headers_for(SECRET, delivery.webhook_id, now, body, delivery.variant)
        assert verify(SECRET, headers, body, now=now) == (
            delivery.variant not in ("forged", "stale")
        )
        try:
            Webhook(SECRET).verify(body, headers)
            verdicts.append((delivery.variant, "valid"))
        except WebhookVerificationError as exc:
            verdicts.append((delivery.variant, str(exc)))
    assert verdicts == [
        (None, "valid"),
        ("duplicate", "valid"),
        ("forged", "No matching signature found"),
        ("stale", "Message timestamp too old"),
    ]


def test_verify_checks_headers_tolerance_and_any_of_several_signatures():
    body = b'{"a":1}'
    headers = signed_headers(SECRET, "msg_x", 1_000_000, body)
    assert verify(SECRET, headers, body, now=1_000_299)
    assert not verify(SECRET, headers, body, now=1_000_301)
    assert not verify(SECRET, headers, body + b" ", now=1_000_000)
    assert not verify(SECRET, {**headers, "webhook-timestamp": "soon"}, body, now=1_000_000)
    several = {**headers, "webhook-signature": "v2,abc v1,Zm9v " + headers["webhook-signature"]}
    assert verify(SECRET, {k.upper(): v for k, v in several.items()}, body, now=1_000_000)


def test_the_engine_reaches_scripted_states_on_time_without_requests():
    engine, changes = _engine_changes(JOB, until=92.9)
    assert [(c.status, c.at) for c in changes] == [("queued", 0.0), ("processing", 4.0)]
    assert engine.next_due() == 93.0
    assert [(c.status, c.at) for c in engine.advance_all(500.0)] == [("succeeded", 93.0)]
    assert engine.next_due() is None
    assert engine.advance_all(600.0) == []


def test_planning_is_a_pure_function_of_the_changes():
    _, changes = _engine_changes(JOB, until=100.0)
    config = parse_scenario(JOB).webhooks
    assert config is not None
    job_id = changes[0].job_id
    rows = [(d.event, d.at, d.variant, d.webhook_id) for d in plan(config, changes, seed=0)]
    ids = {e: webhook_id(0, job_id, e) for e in ("job.queued", "job.processing", "job.succeeded")}
    assert rows == [
        ("job.queued", 0.5, None, ids["job.queued"]),
        ("job.queued", 2.5, "duplicate", ids["job.queued"]),
        ("job.processing", 4.5, "missing", ids["job.processing"]),
        ("job.succeeded", 93.5, None, ids["job.succeeded"]),
        ("job.succeeded", 95.5, "duplicate", ids["job.succeeded"]),
        ("job.succeeded", 97.5, "forged", ids["job.succeeded"]),
        ("job.succeeded", 99.5, "stale", ids["job.succeeded"]),
    ]
    assert plan(config, changes, seed=0) == plan(config, changes, seed=0)
    assert webhook_id(1, job_id, "job.queued") != ids["job.queued"]


def test_reorder_sends_the_terminal_event_first():
    text = JOB.replace("  duplicates: 1\n", "  reorder: true\n").replace(
        "  missing: [job.processing]\n", ""
    )
    text = text.replace("  forged: [job.succeeded]\n  stale: [job.succeeded]\n", "")
    _, changes = _engine_changes(text, until=100.0)
    config = parse_scenario(text).webhooks
    assert config is not None
    rows = [(d.event, d.at, d.variant) for d in plan(config, changes, seed=0)]
    assert rows == [
        ("job.succeeded", 93.5, None),
        ("job.queued", 95.5, "reordered"),
        ("job.processing", 97.5, "reordered"),
    ]


def test_backoff_follows_the_schedule_jittered_down_and_capped():
    config = Webhooks(retry_schedule=(1.0, 10.0))
    waits = [backoff(config, n, seed=3, msg_id="msg_a", variant=None) for n in range(1, 6)]
    assert 0.75 <= waits[0] <= 1.0
    assert all(7.5 <= w <= 10.0 for w in waits[1:])
    assert waits == [backoff(config, n, seed=3, msg_id="msg_a", variant=None) for n in range(1, 6)]
    assert waits != [backoff(config, n, seed=4, msg_id="msg_a", variant=None) for n in range(1, 6)]


@pytest.mark.parametrize(
    ("url", "allowed", "expected"),
    [
        ("http://127.0.0.1:8000/hooks", (), True),
        ("http://127.8.9.10/hooks", (), True),
        ("http://[::1]:9000/", (), True),
        ("https://localhost/hooks", (), True),
        ("http://example.com/hooks", (), False),
        ("http://10.0.0.5/hooks", (), False),
        ("http://example.com/hooks", ("example.com",), True),
        ("http://EXAMPLE.com/hooks", ("example.COM",), True),
        ("ftp://127.0.0.1/hooks", (), False),
        ("not a url", (), False),
    ],
)
def test_only_loopback_targets_are_allowed_by_default(url, allowed, expected):
    assert is_allowed_target(url, allowed) is expected


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            "  secret: abc\n",
            "<string>:4:11: webhooks.secret: expected a secret starting with 'whsec_'",
        ),
        (
            "  secret: whsec_AAAA\n",
            "<string>:4:11: webhooks.secret: expected 24 to 64 bytes of key after 'whsec_', got 3",
        ),
        (
            "  secret: whsec_!!\n",
            "<string>:4:11: webhooks.secret: expected base64 after 'whsec_'",
        ),
        (
            "  url: ftp://x\n",
            "<string>:4:8: webhooks.url: expected an http:// or https:// URL, got 'ftp://x'",
        ),
        (
            "  forged: [job.queued]\n",
            "<string>:4:12: webhooks.forged[0]: 'job.queued' is not among the events sent;"
            " add it to 'events'",
        ),
        (
            "  missing: [job.succeeded]\n  stale: [job.succeeded]\n",
            "<string>:4:13: webhooks.missing[0]: 'job.succeeded' is missing, so it cannot also"
            " be forged or stale",
        ),
        (
            "  retry_schedule: []\n",
            "<string>:4:19: webhooks.retry_schedule: the retry schedule needs at least one wait",
        ),
    ],
)
def test_bad_webhooks_blocks_are_reported_exactly(block, message):
    text = "jobs:\n  - timeline: [{status: succeeded}]\nwebhooks:\n" + block
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text)
    assert str(caught.value) == message


def test_bundled_webhook_scenarios_load():
    for name in ("duplicate-webhook", "forged-webhook"):
        assert name in bundled_scenarios()
        config = load_scenario(name).webhooks
        assert config is not None


def test_the_webhooks_block_in_the_docs_is_valid():
    import re
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "webhooks.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    scenario = parse_scenario("jobs:\n  - timeline: [{status: succeeded}]\n" + block)
    assert scenario.webhooks is not None
    assert scenario.webhooks.reorder is True


MISBEHAVING = """
jobs:
  - timeline:
      - status: queued
      - {at: 1s, status: processing}
      - {at: 2s, status: succeeded}
webhooks:
  events: [job.queued, job.processing, job.succeeded]
  duplicates: 1
  reorder: true
  forged: [job.succeeded, job.processing]
  stale: [job.succeeded]
  missing: [job.queued]
"""


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        # generic, and the providers without webhooks of their own, send every event, signed
        *[
            (
                name,
                [
                    ("job.succeeded", None),
                    ("job.succeeded", "duplicate"),
                    ("job.succeeded", "forged"),
                    ("job.succeeded", "stale"),
                    ("job.processing", "reordered"),
                    ("job.processing", "duplicate"),
                    ("job.processing", "forged"),
                ],
            )
            for name in ("generic", "runway", "google-veo", "dashscope")
        ],
        # OpenAI: only the end, signed
        (
            "openai-videos",
            [
                ("job.succeeded", None),
                ("job.succeeded", "duplicate"),
                ("job.succeeded", "forged"),
                ("job.succeeded", "stale"),
            ],
        ),
        # Luma and Ark: every change, unsigned (nothing to forge)
        *[
            (
                name,
                [
                    ("job.succeeded", None),
                    ("job.succeeded", "duplicate"),
                    ("job.processing", "reordered"),
                    ("job.processing", "duplicate"),
                ],
            )
            for name in ("luma", "ark")
        ],
        # fal: only the end, signed (ED25519)
        (
            "fal",
            [
                ("job.succeeded", None),
                ("job.succeeded", "duplicate"),
                ("job.succeeded", "forged"),
                ("job.succeeded", "stale"),
            ],
        ),
    ],
)
def test_the_dialect_decides_which_events_and_sends_are_planned(dialect, expected):
    from fakeprovider.dialects import get_dialect

    _, changes = _engine_changes(MISBEHAVING, until=10.0)
    config = parse_scenario(MISBEHAVING).webhooks
    assert config is not None
    sends = plan(config, changes, seed=0, shape=get_dialect(dialect))
    # the missing event is journalled without a send wherever the provider would send it
    missing = [(d.event, d.variant) for d in sends if d.variant == "missing"]
    assert missing == ([] if dialect in ("openai-videos", "fal") else [("job.queued", "missing")])
    assert [(d.event, d.variant) for d in sends if d.variant != "missing"] == expected


def test_replicate_plans_what_the_webhook_events_filter_asks_for():
    from fakeprovider.dialects import get_dialect

    engine = Engine(parse_scenario(MISBEHAVING), epoch=DEFAULT_EPOCH)
    body = {"input": {"prompt": "a cat"}, "webhook_events_filter": ["logs", "completed"]}
    engine.handle(Request("submit", "POST", "/p", body=body, callback_url="http://127.0.0.1:9"), 0)
    engine.advance_all(10.0)
    config = parse_scenario(MISBEHAVING).webhooks
    assert config is not None
    sends = plan(config, engine.changes, seed=0, shape=get_dialect("replicate"))
    assert [(d.event, d.variant) for d in sends] == [
        ("job.succeeded", None),
        ("job.succeeded", "duplicate"),
        ("job.succeeded", "forged"),
        ("job.succeeded", "stale"),
        ("job.processing", "reordered"),
        ("job.processing", "duplicate"),
        ("job.processing", "forged"),
    ]
