"""Scenario loading and validation: located errors, round trips, scaling, bundled files."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from fakeprovider._starter import starter
from fakeprovider.errors import ScenarioError
from fakeprovider.scenario import (
    RetryAfter,
    bundled_scenarios,
    load_scenario,
    parse_scenario,
    scenario_schema,
)

# Each bad document and the exact problem reported for it (file:line:col: path: message).
BAD_DOCUMENTS = [
    pytest.param(
        "jobs: [\n",
        "bad.yaml:2:1: invalid YAML: expected the node content, but found '<stream end>'",
        id="syntax",
    ),
    pytest.param(
        "- 1\n- 2\n",
        "bad.yaml:1:1: expected a mapping with a 'jobs' key, got a list",
        id="not_mapping",
    ),
    pytest.param(
        "",
        "bad.yaml:1:1: expected a mapping with a 'jobs' key, got an empty document",
        id="empty",
    ),
    pytest.param(
        "name: x\n",
        "bad.yaml:1:1: missing required key 'jobs' (a list of mappings)",
        id="missing_jobs",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfault: []\n",
        "bad.yaml:3:1: fault: unknown key 'fault' (did you mean 'faults'?); expected one of: jobs, name, description, dialect, seed, faults, rate_limit, concurrency, auth, webhooks, expect, max_body_bytes",
        id="unknown_top_key",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - {status: queued, when: 3s}\n",
        "bad.yaml:3:26: jobs[0].timeline[0].when: unknown key 'when'; expected one of: status, at, after_polls, progress, poll_after, message",
        id="unknown_step_key",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: procesing\n",
        "bad.yaml:3:17: jobs[0].timeline[0].status: expected one of 'queued', 'processing',"
        " 'succeeded', 'failed', 'cancelled', 'completed_with_errors', got 'procesing' (did you"
        " mean 'processing'?)",
        id="misspelt_status",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, every_nth: 2, status: 500}\n",
        "bad.yaml:4:15: faults[0].every_nth: unknown key 'every_nth' (did you mean 'every'?);"
        " expected one of: name, route, job, nth, every, start, end, probability, times, status,"
        " headers, body, retry_after, delay, action",
        id="misspelt_fault_key",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, route: stauts, status: 500}\n",
        "bad.yaml:4:22: faults[0].route: expected one of 'submit', 'status', 'content', 'cancel',"
        " 'list', 'any', got 'stauts' (did you mean 'status'?)",
        id="misspelt_route",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n"
        "  - {name: f, status: 503, retry_after: {delay: 2s, form: IMF}}\n",
        "bad.yaml:4:59: faults[0].retry_after.form: expected one of 'seconds', 'imf', 'rfc850',"
        " 'asctime', 'ms', got 'IMF' (did you mean 'imf'?)",
        id="enum_value_in_the_wrong_case",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nwebhooks: {events: [job.succeded]}\n",
        "bad.yaml:3:21: webhooks.events[0]: expected one of 'job.queued', 'job.processing',"
        " 'job.succeeded', 'job.failed', 'job.cancelled', 'job.completed_with_errors', got"
        " 'job.succeded' (did you mean 'job.succeeded'?)",
        id="misspelt_event",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: failed}]\n    message: GPU out of memory\n",
        "bad.yaml:3:5: jobs[0].message: unknown key 'message' (it belongs one level down, under"
        " 'timeline' or 'error'); expected one of: timeline, name, match, poll_after,"
        " estimated_duration, result, error, summary",
        id="key_one_level_too_high",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\ndeadline: 5m\n",
        "bad.yaml:3:1: deadline: unknown key 'deadline' (it belongs one level down, under"
        " 'expect'); expected one of: jobs, name, description, dialect, seed, faults, rate_limit,"
        " concurrency, auth, webhooks, expect, max_body_bytes",
        id="expect_key_at_the_top",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - {status: succeeded, result: {size_bytes: 10}}\n",
        "bad.yaml:3:29: jobs[0].timeline[0].result: unknown key 'result' (it belongs one level up,"
        " in jobs[0]); expected one of: status, at, after_polls, progress, poll_after, message",
        id="key_one_level_too_deep",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: done\n",
        "bad.yaml:3:17: jobs[0].timeline[0].status: expected one of 'queued', 'processing', 'succeeded', 'failed', 'cancelled', 'completed_with_errors', got 'done'",
        id="bad_status",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: queued\n      - {at: 5 seconds, status: succeeded}\n",
        "bad.yaml:4:14: jobs[0].timeline[1].at: expected a duration such as '250ms', '7s' or '2m', got '5 seconds'",
        id="bad_duration",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - {status: processing, progress: 120}\n",
        "bad.yaml:3:40: jobs[0].timeline[0].progress: expected an integer between 0 and 100, got 120",
        id="negative_progress",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: queued\n      - {at: 10s, status: succeeded}\n      - {at: 20s, status: processing}\n",
        "bad.yaml:5:9: jobs[0].timeline[2]: nothing can follow the terminal status 'succeeded' of step 1",
        id="terminal_then_more",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: queued\n      - {at: 30s, status: processing}\n      - {at: 10s, status: succeeded}\n",
        "bad.yaml:5:14: jobs[0].timeline[2].at: times must not go backwards: 10s comes after 30s",
        id="time_backwards",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: queued\n      - {at: 3s, after_polls: 2, status: succeeded}\n",
        "bad.yaml:4:9: jobs[0].timeline[1]: a step starts either 'at' a time or 'after_polls' reads, not both",
        id="at_and_polls",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: queued\n      - {after_polls: 4, status: processing}\n      - {after_polls: 2, status: succeeded}\n",
        "bad.yaml:5:23: jobs[0].timeline[2].after_polls: poll counts must not go backwards: 2 comes after 4",
        id="polls_backwards",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - {progress: 5}\n",
        "bad.yaml:3:9: jobs[0].timeline[0].status: the first step must set a status",
        id="first_without_status",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: queued\n      - {at: 4s}\n",
        "bad.yaml:4:9: jobs[0].timeline[1]: a step must set 'status', 'progress' or 'message'",
        id="empty_step",
    ),
    pytest.param(
        "jobs: []\n",
        "bad.yaml:1:7: jobs: a scenario needs at least one job",
        id="empty_jobs",
    ),
    pytest.param(
        "jobs:\n  - timeline: []\n",
        "bad.yaml:2:15: jobs[0].timeline: a timeline needs at least one step",
        id="empty_timeline",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {route: status, status: 503}\n",
        "bad.yaml:4:5: faults[0]: missing required key 'name' (a string)",
        id="fault_no_name",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, route: poll, status: 503}\n",
        "bad.yaml:4:22: faults[0].route: expected one of 'submit', 'status', 'content', 'cancel', 'list', 'any', got 'poll'",
        id="fault_bad_route",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, route: status, nth: 2}\n",
        "bad.yaml:4:5: faults[0]: a fault must change something: set 'status', 'delay', 'headers', 'retry_after' or 'action'",
        id="fault_noop",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, status: 503, probability: 1.5}\n",
        "bad.yaml:4:41: faults[0].probability: expected a number between 0 and 1, got 1.5",
        id="fault_probability",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, status: 999}\n",
        "bad.yaml:4:23: faults[0].status: expected an HTTP status between 100 and 599, got 999",
        id="fault_status_range",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, action: reset, status: 503}\n",
        "bad.yaml:4:23: faults[0].action: action 'reset' sends no answer, so 'status' and 'body' cannot be set",
        id="fault_reset_with_status",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, status: 503, start: 20s, end: 10s}\n",
        "bad.yaml:4:45: faults[0].end: the window ends (10s) before it starts (20s)",
        id="fault_window",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, status: 503, job: 3}\n",
        "bad.yaml:4:33: faults[0].job: there is no jobs[3]: the scenario has 1 job(s)",
        id="fault_job_index",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, status: 503}\n  - {name: f, status: 502}\n",
        "bad.yaml:5:12: faults[1].name: fault name 'f' is used twice",
        id="fault_dup_name",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, status: 429, retry_after: {delay: 3s, form: rfc1123}}\n",
        "bad.yaml:4:59: faults[0].retry_after.form: expected one of 'seconds', 'imf', 'rfc850', 'asctime', 'ms', got 'rfc1123'",
        id="retry_after_form",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nfaults:\n  - {name: f, status: 503, nth: 0}\n",
        "bad.yaml:4:33: faults[0].nth: expected an integer at least 1 or a list of integers at least 1 or null, got 0",
        id="nth_zero",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nrate_limit: {capacity: 3}\n",
        "bad.yaml:3:13: rate_limit: missing required key 'refill_every' (a duration such as '250ms', '7s' or '2m')",
        id="rate_limit_missing",
    ),
    pytest.param(
        "seed: yes\njobs:\n  - timeline: [{status: queued}]\n",
        "bad.yaml:1:7: seed: expected an integer, got true",
        id="bool_for_int",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: queued\n      - {at: 5s, status: completed_with_errors}\n",
        "bad.yaml:2:5: jobs[0].summary: a job that ends 'completed_with_errors' needs a summary",
        id="cwe_no_summary",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\njobs: []\n",
        "bad.yaml:3:1: duplicate key 'jobs'; each key may appear once",
        id="duplicate_key",
    ),
    pytest.param(
        "jobs: {timeline: []}\n",
        "bad.yaml:1:7: jobs: expected a list of mappings, got a mapping",
        id="jobs_not_list",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nexpect: {outcome: success}\n",
        "bad.yaml:3:19: expect.outcome: expected one of 'succeeded', 'failed', 'cancelled', 'timed_out', 'completed_with_errors', got 'success' (did you mean 'succeeded'?)",
        id="expect_outcome",
    ),
    pytest.param(
        "jobs:\n\t- timeline: [{status: queued}]\n",
        "bad.yaml:2:1: invalid YAML: a tab character; indent with spaces, not tabs",
        id="tab_indent",
    ),
    pytest.param(
        'jobs:\n  - timeline:\n      - status: "queued\n',
        "bad.yaml:3:17: invalid YAML: this quoted string is never closed",
        id="unclosed_quote",
    ),
    pytest.param(
        "jobs:\n  - timeline:\n      - status: queued\n     - {at: 5s, status: succeeded}\n",
        "bad.yaml:4:6: invalid YAML: this line is not indented like the block mapping that starts"
        " at 2:5: keys of one mapping, and the '-' items of one list, must start in the same column",
        id="misaligned_item",
    ),
    pytest.param(
        "dialect: openai\njobs:\n  - timeline: [{status: queued}]\n",
        "bad.yaml:1:10: dialect: expected one of 'generic', 'openai-videos', 'runway', 'replicate',"
        " 'fal', 'google-veo', 'gemini', 'luma', 'ark', 'dashscope', got 'openai' (did you mean 'openai-videos'?)",
        id="unknown_dialect",
    ),
    pytest.param(
        "jobs:\n  - poll_after: -5s\n    timeline: [{status: queued}]\n",
        "bad.yaml:2:17: jobs[0].poll_after: a duration cannot be negative, got '-5s'",
        id="negative_duration",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\n"
        "faults:\n  - {name: f, status: 429, retry_after: {form: imf}}\n",
        "bad.yaml:4:41: faults[0].retry_after.delay: missing required key 'delay' (a duration such"
        " as '250ms', '7s' or '2m'); only a 'raw' header value goes without one",
        id="retry_after_without_delay",
    ),
    pytest.param(
        "jobs:\n  - timeline: [{status: queued}]\nauth: {tokens: []}\n",
        "bad.yaml:3:16: auth.tokens: list at least one token: with none, every request gets a 401",
        id="no_tokens",
    ),
]


@pytest.mark.parametrize(("text", "expected"), BAD_DOCUMENTS)
def test_bad_document_is_reported_with_file_line_column_and_path(text: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, filename="bad.yaml")
    assert [str(p) for p in caught.value.problems] == [expected]


def test_every_problem_in_a_document_is_reported_in_document_order() -> None:
    text = "jobs:\n  - timeline: [{status: done}]\nfaults:\n  - {name: f, route: poll, status: 503}\nbogus: 1\n"
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, filename="two.yaml")
    assert str(caught.value) == (
        "two.yaml:2:25: jobs[0].timeline[0].status: expected one of 'queued', 'processing', "
        "'succeeded', 'failed', 'cancelled', 'completed_with_errors', got 'done'\n"
        "two.yaml:4:22: faults[0].route: expected one of 'submit', 'status', 'content', 'cancel', "
        "'list', 'any', got 'poll'\n"
        "two.yaml:5:1: bogus: unknown key 'bogus'; expected one of: jobs, name, description, dialect, "
        "seed, faults, rate_limit, concurrency, auth, webhooks, expect, max_body_bytes"
    )


def test_problem_carries_its_parts() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario("jobs:\n  - timeline:\n      - status: done\n", filename="p.yaml")
    (problem,) = caught.value.problems
    assert (problem.file, problem.line, problem.column, problem.path) == (
        "p.yaml",
        3,
        17,
        "jobs[0].timeline[0].status",
    )


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("jobs:\n  - timeline:\n      - {status: queued, at: soon}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == (
        f"{path}:3:30: jobs[0].timeline[0].at: expected a duration such as '250ms', '7s' or '2m', got 'soon'"
    )


def test_unknown_name_lists_the_bundled_scenarios_and_the_closest() -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario("slow-sucess")
    assert str(caught.value).startswith(
        "slow-sucess: no such file and no bundled scenario named 'slow-sucess' (did you mean"
        " 'slow-success'?); bundled: ambiguous-submit, "
    )


def test_durations_accept_units_and_bare_seconds() -> None:
    scenario = parse_scenario(
        "jobs:\n  - timeline:\n      - status: queued\n      - {at: 250ms, status: processing}\n"
        "      - {at: 1m30s, progress: 50}\n      - {at: 93, status: succeeded}\n"
    )
    assert [s.at for s in scenario.jobs[0].timeline] == [None, 0.25, 90.0, 93.0]


def test_retry_after_short_form_is_delay_seconds() -> None:
    scenario = parse_scenario(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n  - {name: a, status: 503, retry_after: 7s}\n"
        "  - {name: b, status: 429, retry_after: {delay: 30s, form: rfc850}}\n"
    )
    assert [f.retry for f in scenario.faults] == [
        RetryAfter(delay=7.0, form="seconds"),
        RetryAfter(delay=30.0, form="rfc850"),
    ]


def test_nth_accepts_one_number_or_a_list() -> None:
    scenario = parse_scenario(
        "jobs: [{timeline: [{status: queued}]}]\nfaults:\n  - {name: a, status: 503, nth: 2}\n"
        "  - {name: b, status: 503, nth: [3, 5]}\n"
    )
    assert [f.nth_set for f in scenario.faults] == [frozenset({2}), frozenset({3, 5})]


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_yaml_round_trip_gives_an_equal_scenario(name: str) -> None:
    scenario = load_scenario(name)
    assert parse_scenario(scenario.to_yaml()) == scenario


def test_time_scale_multiplies_every_duration_and_no_count() -> None:
    scenario = load_scenario("transient-5xx").scaled(0.1)
    assert [s.at for s in scenario.jobs[0].timeline] == [None, pytest.approx(0.2), 3.0, 6.0]
    assert scenario.jobs[0].poll_after == pytest.approx(0.4)
    assert [f.nth for f in scenario.faults] == [(2, 3), 6, 9, 1]
    assert scenario.faults[0].retry_after == pytest.approx(0.3)
    assert scenario.expect.deadline == pytest.approx(30.0)
    assert scenario.expect.max_retries == 3


@pytest.mark.parametrize("factor", [0, -1, math.inf, math.nan, 1e308, 1000.5])
def test_time_scale_must_be_positive_and_at_most_1000(factor: float) -> None:
    with pytest.raises(
        ValueError,
        match="^"
        + re.escape(f"time scale must be a number greater than 0 and at most 1000, got {factor!r}")
        + "$",
    ):
        load_scenario("slow-success").scaled(factor)


def test_load_scenario_with_time_scale_runs_a_93_second_job_in_9_3_seconds() -> None:
    scenario = load_scenario("slow-success", time_scale=0.1)
    assert scenario.jobs[0].end_time == pytest.approx(9.3)


def test_schema_is_generated_from_the_model_and_shipped() -> None:
    schema = scenario_schema()
    shipped = Path(__file__).parent.parent / "fakeprovider" / "scenario.schema.json"
    assert json.loads(shipped.read_text()) == schema
    step = schema["$defs"]["Step"]
    assert step["additionalProperties"] is False
    assert step["properties"]["status"]["anyOf"][0]["enum"][:2] == ["queued", "processing"]
    assert schema["$ref"] == "#/$defs/Scenario"
    assert schema["$defs"]["Scenario"]["required"] == ["jobs"]


def test_the_schema_id_is_a_stable_name_editors_never_fetch() -> None:
    assert scenario_schema()["$id"] == "urn:fakeprovider:scenario:1"
    jsonschema.Draft202012Validator.check_schema(scenario_schema())


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_each_bundled_scenario_validates_against_the_schema(name: str) -> None:
    # an independent implementation of JSON Schema judges the schema editors are given
    validator = jsonschema.Draft202012Validator(scenario_schema())
    document = yaml.safe_load(bundled_scenarios()[name].read_text(encoding="utf-8"))
    assert [error.message for error in validator.iter_errors(document)] == []


def test_the_starter_validates_against_the_schema() -> None:
    validator = jsonschema.Draft202012Validator(scenario_schema())
    assert [e.message for e in validator.iter_errors(yaml.safe_load(starter("x")))] == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("jobs: [{timeline: [{status: procesing}]}]", ["jobs", 0, "timeline", 0, "status"]),
        ("jobs: [{timeline: [{status: queued}], every_nth: 2}]", ["jobs", 0]),
        ("jobs: [{timeline: [{status: queued, at: soon}]}]", ["jobs", 0, "timeline", 0, "at"]),
        ("name: x", []),
    ],
)
def test_the_schema_flags_what_an_editor_should_underline(text: str, where: list[object]) -> None:
    validator = jsonschema.Draft202012Validator(scenario_schema())
    errors = list(validator.iter_errors(yaml.safe_load(text)))
    assert errors
    assert [list(e.absolute_path) for e in errors] == [where]


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_bundled_scenario_is_valid_described_and_has_expectations(name: str) -> None:
    scenario = load_scenario(name)
    assert scenario.name == name
    assert scenario.description
    assert scenario.expect.deadline is not None


def test_time_scale_leaves_the_receivers_own_durations_alone() -> None:
    scenario = load_scenario("duplicate-webhook").scaled(0.05)
    assert scenario.expect.ack_limit == 2.0
    assert scenario.webhooks is not None
    assert scenario.webhooks.timeout == 10.0
    assert scenario.webhooks.duplicate_gap == pytest.approx(
        load_scenario("duplicate-webhook").webhooks.duplicate_gap * 0.05
    )  # type: ignore[union-attr]


def test_a_raw_retry_after_needs_no_delay() -> None:
    scenario = parse_scenario(
        "jobs:\n  - timeline: [{status: queued}]\n"
        "faults:\n  - {name: f, status: 429, retry_after: {raw: soon}}\n"
    )
    retry = scenario.faults[0].retry_after
    assert isinstance(retry, RetryAfter)
    assert (retry.raw, retry.delay, retry.wait) == ("soon", None, 0.0)


def test_a_quoted_number_is_a_duration_in_seconds() -> None:
    scenario = parse_scenario('jobs:\n  - poll_after: "2.5"\n    timeline: [{status: queued}]\n')
    assert scenario.jobs[0].poll_after == 2.5


def test_an_undecodable_file_names_the_byte_and_its_offset(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"name: x\njobs: [\xc3\xa9, \xff]\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == (
        f"{path}:2:11: not UTF-8 text: byte 0xff at byte offset 19 cannot be decoded; save the"
        " file as UTF-8"
    )


def test_a_missing_file_is_named_without_a_position(tmp_path: Path) -> None:
    path = tmp_path / "gone" / "x.yaml"
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value) == f"{path}: cannot read the file: No such file or directory"


def test_every_dialect_name_in_the_scenario_model_has_a_dialect() -> None:
    from fakeprovider.dialects import DIALECTS
    from fakeprovider.scenario import DIALECT_NAMES

    assert tuple(DIALECTS) == DIALECT_NAMES
