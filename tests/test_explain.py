"""``explain``: a scenario in words, webhooks and the submit each job serves included."""

from __future__ import annotations

import re

import pytest

from fakeprovider.explain import explain
from fakeprovider.scenario import bundled_scenarios, load_scenario, parse_scenario


def test_explain_describes_every_webhook_misbehaviour() -> None:
    text = explain(load_scenario("duplicate-webhook"))
    assert text.splitlines()[-6:] == [
        "Webhooks: job.processing, job.succeeded, job.failed to each job's callback_url, 2s after"
        " the change, signed (Standard Webhooks).",
        "  every message is sent 3 times, 1.5s apart (same webhook-id, fresh timestamp and"
        " signature)",
        "  each job's earlier events are held back and sent after its terminal one",
        "  a receiver's 429, 5xx or silence past 10s is retried, up to 5 attempts, after 1s, 5s,"
        " 30s (jittered); 410 stops",
        "",
        "Expect: outcome succeeded, deadline 300s, at most 5 retries in a row, 1 download(s) per"
        " job, webhooks acknowledged within 2s.",
    ]


def test_explain_names_forged_stale_and_missing_events() -> None:
    scenario = parse_scenario(
        "jobs:\n  - timeline: [{status: queued}, {at: 5s, status: succeeded}]\n"
        "webhooks:\n  url: http://127.0.0.1:9/hook\n  forged: [job.succeeded]\n"
        "  stale: [job.succeeded]\n  missing: [job.failed]\n"
    )
    lines = explain(scenario).splitlines()
    start = lines.index(
        "Webhooks: job.succeeded, job.failed, job.cancelled, job.completed_with_errors to each"
        " job's callback_url, else http://127.0.0.1:9/hook, at the change, signed (Standard"
        " Webhooks)."
    )
    assert lines[start + 1 : start + 4] == [
        "  also sent once with a bad signature: job.succeeded",
        "  also replayed once with a 10-minute-old timestamp: job.succeeded",
        "  never sent (poll to notice): job.failed",
    ]


def test_explain_says_which_submits_each_job_serves() -> None:
    scenario = parse_scenario(
        "jobs:\n"
        "  - name: hd\n    match: {resolution: 1080p}\n    timeline: [{status: failed}]\n"
        "  - name: first\n    timeline: [{status: succeeded}]\n"
        "  - name: rest\n    timeline: [{status: succeeded}]\n"
    )
    labels = [line for line in explain(scenario).splitlines() if line.startswith("Job ")]
    assert labels == [
        "Job 0 (hd), for submits matching {'resolution': '1080p'}:",
        "Job 1 (first), for the 1st submit that matches no job's match:",
        "Job 2 (rest), for the 2nd submit that matches no job's match and every later one:",
    ]


def test_explain_counts_in_ordinals() -> None:
    scenario = parse_scenario(
        "jobs:\n  - timeline: [{status: succeeded}]\n  - timeline: [{status: failed}]\n"
        "faults:\n  - {name: a, route: list, every: 2, status: 500}\n"
        "  - {name: b, route: status, every: 12, status: 503}\n"
    )
    lines = explain(scenario).splitlines()
    assert "Job 1, for the 2nd submit and every later one:" in lines
    assert "  - a: every 2nd request to list: answer 500" in lines
    assert "  - b: every 12th request to status: answer 503" in lines


def test_explain_writes_a_fault_window_in_one_unit() -> None:
    scenario = parse_scenario(
        "jobs:\n  - timeline: [{status: succeeded}]\n"
        "faults:\n  - {name: a, start: 1m, end: 90s, status: 500}\n"
        "  - {name: b, start: 1m, end: 2m, status: 500}\n"
    )
    lines = explain(scenario).splitlines()
    assert "  - a: every request (between 60s and 90s): answer 500" in lines
    assert "  - b: every request (between 60s and 120s): answer 500" in lines


@pytest.mark.parametrize("scale", [1.0, 0.1, 0.003])
@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_explain_writes_every_time_in_seconds(name: str, scale: float) -> None:
    text = explain(load_scenario(name, time_scale=scale))
    body = text.split("\n", 1)[1]  # the first line is the author's description
    assert re.findall(r"\b\d+(?:\.\d+)?(?:ms|m|h)\b", body) == []
    assert re.findall(r"\b\d+\.\d{4,}s\b", body) == []  # never finer than the millisecond


def test_explain_shows_the_retry_after_sent_at_the_time_scale() -> None:
    lines = explain(load_scenario("transient-5xx", time_scale=0.1)).splitlines()
    assert (
        "  - upstream-503: requests #2, #3 to status: answer 503, with Retry-After: 1 (0.3s"
        " rounded up to whole seconds)"
    ) in lines
    assert "                 at 0.2s: processing, progress 5%" in lines
    assert "  poll hint while running: 0.4s" in lines
    unscaled = explain(load_scenario("transient-5xx")).splitlines()
    assert (
        "  - upstream-503: requests #2, #3 to status: answer 503, with Retry-After: 3" in unscaled
    )


def test_explain_shows_each_retry_after_form_as_sent() -> None:
    scenario = parse_scenario(
        "jobs:\n  - timeline: [{status: succeeded}]\n"
        "faults:\n"
        "  - {name: a, status: 503, retry_after: {delay: 1250ms, form: ms}}\n"
        "  - {name: b, status: 503, retry_after: {delay: 2s, form: imf}}\n"
        "  - {name: c, status: 503, retry_after: {raw: soon}}\n"
        "rate_limit: {capacity: 1, refill_every: 2500ms}\n"
        "concurrency: {max_active_jobs: 1, retry_after: 7s}\n"
    )
    lines = explain(scenario).splitlines()
    assert lines[lines.index("Faults:") + 1 :][:3] == [
        "  - a: every request: answer 503, with retry-after-ms: 1250",
        "  - b: every request: answer 503, with Retry-After: an HTTP-date (imf) 2s after the"
        " answer, rounded up to a whole second",
        "  - c: every request: answer 503, with Retry-After: soon",
    ]
    assert (
        "Rate limit: 1 requests at once on any per API key, one more every 2.5s; over it: 429 with"
        " Retry-After: up to 3 (the wait for the next token, rounded up to whole seconds)."
    ) in lines
    assert (
        "Concurrency: at most 1 active jobs; another submit gets 429 with Retry-After: 7."
    ) in lines
