"""Properties of the strategies: valid, round-tripping, deterministic, covering, well-argued."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, event, find, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fakeprovider.cli import main as cli_main
from fakeprovider.clock import VirtualClock
from fakeprovider.http import HttpRequest
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import (
    Fault,
    JobSpec,
    RetryAfter,
    Scenario,
    Step,
    Webhooks,
    parse_scenario,
)
from fakeprovider.server import ServerThread
from fakeprovider.strategies import (
    FAULT_KINDS,
    RETRY_AFTER_FORMS,
    fault_plans,
    note_scenario,
    retry_after_values,
    save_scenario,
    scenario_yaml,
    scenarios,
    timelines,
    webhook_plans,
)

QUIET = settings(database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- validity and round trips ---------------------------------------------------------------------


@QUIET
@given(scenarios(webhooks=True))
def test_every_scenario_survives_a_yaml_round_trip(scenario: Scenario) -> None:
    assert isinstance(scenario, Scenario)
    assert parse_scenario(scenario.to_yaml(), filename="generated.yaml") == scenario
    assert parse_scenario(scenario_yaml(scenario)) == scenario  # the commented form too


@QUIET
@given(st.data())
def test_building_blocks_draw_valid_parts(data: st.DataObject) -> None:
    timeline = data.draw(timelines())
    assert all(isinstance(s, Step) for s in timeline)
    faults = data.draw(fault_plans(jobs=2))
    webhooks = data.draw(webhook_plans())
    retry = data.draw(retry_after_values())
    summary = {"summary": {"succeeded": 3, "failed": 1}}
    document: dict[str, Any] = {
        "jobs": [
            {"timeline": [_plain(step) for step in timeline], **summary},
            {"timeline": [{"status": "succeeded"}]},
        ],
        "faults": [
            json.loads(json.dumps(Scenario(jobs=(), faults=(f,)).to_dict()))["faults"][0]
            for f in faults
        ],
        "webhooks": Scenario(jobs=(), webhooks=webhooks).to_dict()["webhooks"],
    }
    scenario = parse_scenario(json.dumps(document))
    assert scenario.jobs[0].timeline == timeline
    assert scenario.faults == faults
    assert scenario.webhooks == webhooks
    assert isinstance(retry, (float, RetryAfter))
    assert (
        parse_scenario(
            Scenario(jobs=scenario.jobs, faults=(Fault(name="x", retry_after=retry),)).to_yaml()
        )
        .faults[0]
        .retry_after
        == retry
    )


def _plain(step: Step) -> dict[str, Any]:
    return Scenario(jobs=(JobSpec(timeline=(step,)),)).to_dict()["jobs"][0]["timeline"][0]  # type: ignore[no-any-return]


def _drive(provider: FakeProvider, rounds: int = 30) -> list[dict[str, Any]]:
    """A fixed, client-independent request script: same scenario, same journal."""
    clock = provider.clock
    assert isinstance(clock, VirtualClock)
    job_id: str | None = None
    for index in range(rounds):
        if job_id is None:
            request = HttpRequest(
                "POST",
                "/v1/jobs",
                body=b'{"prompt": "a lighthouse"}',
                headers={"content-type": "application/json"},
            )
        elif index % 5 == 4:
            request = HttpRequest("GET", f"/v1/jobs/{job_id}/content")
        else:
            request = HttpRequest("GET", f"/v1/jobs/{job_id}")
        reply, response = provider.receive(request)
        clock.advance(reply.delay)
        provider.sent(
            reply, started=clock.now(), completed=clock.now(), status_code=response.status
        )
        if job_id is None and provider.engine.jobs:
            job_id = provider.engine.jobs[0].id  # lost and failed answers too: the job exists
        clock.advance(7.0)
    return [entry.to_dict() for entry in provider.journal]


@settings(QUIET, max_examples=50)
@given(scenarios())
def test_the_yaml_replays_the_same_behaviour(scenario: Scenario) -> None:
    reloaded = parse_scenario(scenario.to_yaml())
    original = _drive(FakeProvider(scenario, clock=VirtualClock()))
    replayed = _drive(FakeProvider(reloaded, clock=VirtualClock()))
    assert replayed == original


def test_fakeprovider_validate_accepts_what_the_strategies_dump(tmp_path: Path) -> None:
    drawn: list[Scenario] = []

    @settings(QUIET, max_examples=25)
    @seed(20240601)
    @given(scenarios(webhooks=True))
    def collect(scenario: Scenario) -> None:
        drawn.append(scenario)

    collect()
    paths = [save_scenario(s, tmp_path / f"s{i}.yaml") for i, s in enumerate(drawn)]
    assert cli_main(["validate", *map(str, paths)]) == 0
    done = subprocess.run(
        [sys.executable, "-m", "fakeprovider", "validate", *map(str, paths[:5])],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0
    assert done.stderr.splitlines() == [f"{path}: ok" for path in paths[:5]]


# -- determinism ------------------------------------------------------------------------------------


def _draws(seed_value: int) -> list[str]:
    out: list[str] = []

    @settings(QUIET, max_examples=40)
    @seed(seed_value)
    @given(scenarios(webhooks=True))
    def collect(scenario: Scenario) -> None:
        out.append(scenario.to_yaml())

    collect()
    return out


def test_the_same_seed_draws_the_same_scenarios() -> None:
    first = _draws(1234)
    assert len(first) == 40
    assert _draws(1234) == first
    assert _draws(4321) != first


# -- coverage ---------------------------------------------------------------------------------------


def _coverage(strategy: st.SearchStrategy[Scenario], examples: int) -> Counter[str]:
    seen: Counter[str] = Counter()

    @settings(QUIET, max_examples=examples)
    @seed(7)
    @given(strategy)
    def count(scenario: Scenario) -> None:
        for fault in scenario.faults:
            kind = fault.name.rsplit("-", 1)[0].replace("-", "_")
            seen[f"kind:{kind}"] += 1
            event(f"fault kind {kind}")
            seen[f"route:{fault.route}"] += 1
            for trigger in ("nth", "every", "start", "probability", "times", "job"):
                if getattr(fault, trigger) is not None:
                    seen[f"trigger:{trigger}"] += 1
            if isinstance(fault.nth, tuple):
                seen["trigger:nth-list"] += 1
            if fault.status is not None:
                seen[f"status:{fault.status}"] += 1
            if fault.retry is not None:
                seen[f"retry-after:{fault.retry.form}"] += 1
                event(f"Retry-After form {fault.retry.form}")
        if scenario.rate_limit is not None:
            seen[f"retry-after:{scenario.rate_limit.retry_after_form}"] += 1
            seen["rate-limit"] += 1
        for job in scenario.jobs:
            seen[f"outcome:{job.final_status}"] += 1  # 'processing': never finishes
            if len(job.timeline) > 1:
                seen["timeline:" + ("polls" if job.end_time is None else "time")] += 1
        if scenario.webhooks is not None:
            seen["webhooks"] += 1
            for name in ("forged", "stale", "missing"):
                if getattr(scenario.webhooks, name):
                    seen[f"webhooks:{name}"] += 1
            if scenario.webhooks.duplicates:
                seen["webhooks:duplicates"] += 1
            if scenario.webhooks.reorder:
                seen["webhooks:reorder"] += 1

    count()
    return seen


def test_every_fault_kind_retry_after_form_and_timeline_kind_is_drawn() -> None:
    seen = _coverage(scenarios(webhooks=True), 400)
    wanted = [
        *(f"kind:{kind}" for kind in FAULT_KINDS),
        *(f"retry-after:{form}" for form in RETRY_AFTER_FORMS),
        *(f"route:{route}" for route in ("status", "submit", "content", "any")),
        *(f"trigger:{t}" for t in ("nth", "nth-list", "every", "start", "probability", "times", "job")),
        *(f"status:{code}" for code in (401, 403, 429, 500, 502, 503, 504)),
        "outcome:succeeded", "outcome:failed", "outcome:cancelled",
        "outcome:completed_with_errors", "outcome:processing",  # processing: never finishes
        "timeline:time", "timeline:polls", "rate-limit",
        "webhooks", "webhooks:forged", "webhooks:stale", "webhooks:missing",
        "webhooks:duplicates", "webhooks:reorder",
    ]  # fmt: skip
    rare = {key: seen[key] for key in wanted if seen[key] < 5}
    assert rare == {}, f"drawn fewer than 5 times in 400 scenarios: {rare}"


def test_arguments_narrow_what_is_drawn() -> None:
    seen = _coverage(
        scenarios(
            min_jobs=2,
            max_jobs=2,
            fault_kinds=["reset"],
            retry_after_forms=["asctime"],
            timeline_kinds=["polls"],
            outcomes=["failed"],
        ),
        100,
    )
    assert {k for k in seen if k.startswith("kind:")} == {"kind:reset"}
    assert {k for k in seen if k.startswith("retry-after:")} == {"retry-after:asctime"}
    assert {k for k in seen if k.startswith("timeline:")} == {"timeline:polls"}
    assert {k for k in seen if k.startswith("outcome:")} == {"outcome:failed"}
    assert seen["outcome:failed"] == 200  # two jobs in each of 100 scenarios
    assert "webhooks" not in seen


# -- shrinking toward the simplest case -------------------------------------------------------------


#: Every phase but ``explain``, for searches whose failure these tests read only for its
#: shrunk value and notes: ``explain`` traces every line the failing example's variants run
#: (``sys.settrace``), most of such a search's time.
_FIND_PHASES = tuple(phase for phase in Phase if phase is not Phase.explain)


def _find(strategy: st.SearchStrategy[Any], condition: Callable[[Any], bool]) -> Any:
    return find(
        strategy,
        condition,
        settings=settings(database=None, max_examples=2000, phases=_FIND_PHASES),
    )


def test_the_simplest_scenario_is_one_job_that_succeeds_at_once() -> None:
    simplest = _find(scenarios(), lambda s: True)
    assert simplest == Scenario(
        jobs=(JobSpec(timeline=(Step(status="succeeded"),)),), name="generated"
    )
    assert simplest.to_yaml() == "jobs:\n- timeline:\n  - status: succeeded\nname: generated\n"


def test_a_fault_shrinks_to_a_503_on_the_first_status_read() -> None:
    found = _find(scenarios(), lambda s: len(s.faults) > 0)
    assert found.faults == (Fault(name="server-error-1", route="status", nth=1, status=503),)
    assert len(found.jobs) == 1
    assert found.rate_limit is None


def test_timelines_shrink_toward_the_earliest_completion() -> None:
    assert _find(timelines(), lambda t: True) == (Step(status="succeeded"),)
    assert _find(timelines(), lambda t: len(t) > 2) == (
        Step(status="queued"),
        Step(status="processing", at=0.0),
        Step(status="succeeded", at=0.0),
    )
    assert _find(timelines(), lambda t: any(s.after_polls for s in t)) == (
        Step(status="queued"),
        Step(status="succeeded", after_polls=1),
    )


def test_retry_after_values_shrink_to_the_simplest_header() -> None:
    assert _find(retry_after_values(), lambda v: True) == 1.0
    assert _find(retry_after_values(), lambda v: isinstance(v, RetryAfter)) == RetryAfter(
        delay=1.0, form="imf"
    )
    assert _find(retry_after_values(forms=["ms"], min_delay=0.25), lambda v: True) == RetryAfter(
        delay=0.25, form="ms"
    )


def test_webhook_plans_shrink_to_plain_delivery() -> None:
    assert _find(webhook_plans(), lambda w: True) == Webhooks(events=("job.succeeded",))
    assert _find(webhook_plans(url="http://127.0.0.1:9/hooks"), lambda w: w.forged) == Webhooks(
        url="http://127.0.0.1:9/hooks", events=("job.succeeded",), forged=("job.succeeded",)
    )


# -- arguments and reprs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        (scenarios(min_jobs=0), "min_jobs=0 must be at least 1."),
        (scenarios(max_jobs=1.5), "max_jobs=1.5 must be an integer."),  # type: ignore[arg-type]
        (scenarios(min_jobs=3, max_jobs=2), "Cannot have max_jobs=2 < min_jobs=3."),
        (scenarios(max_faults=-1), "max_faults=-1 must be at least 0."),
        (scenarios(max_faults=True), "max_faults=True must be an integer."),
        (scenarios(max_duration=0), "max_duration=0 must be longer than zero."),
        (
            scenarios(max_duration="soon"),
            "max_duration='soon' must be a non-negative number of seconds or a duration such as '10m'.",
        ),
        (
            scenarios(fault_kinds=["timeout"]),
            "fault_kinds contains the unknown choice 'timeout'; choose from 'server_error',"
            " 'rate_limited', 'slow', 'reset', 'lose_response', 'auth_error'.",
        ),
        (
            scenarios(fault_kinds=["server-error"]),
            "fault_kinds contains the unknown choice 'server-error' (did you mean 'server_error'?);"
            " choose from 'server_error', 'rate_limited', 'slow', 'reset', 'lose_response',"
            " 'auth_error'.",
        ),
        (scenarios(fault_kinds=[]), "fault_kinds=[] must name at least one choice."),
        (scenarios(fault_kinds="reset"), "fault_kinds='reset' must be a list or tuple of choices."),
        (
            scenarios(retry_after_forms=["http-date"]),
            "retry_after_forms contains the unknown choice 'http-date'; choose from 'seconds',"
            " 'imf', 'rfc850', 'asctime', 'ms'.",
        ),
        (scenarios(rate_limits=None), "rate_limits=None must be True or False."),  # type: ignore[arg-type]
        (scenarios(webhooks=1), "webhooks=1 must be True or False."),  # type: ignore[arg-type]
        (
            scenarios(outcomes=["done"]),
            "outcomes contains the unknown choice 'done'; choose from 'succeeded', 'failed',"
            " 'cancelled', 'completed_with_errors', None.",
        ),
        (
            scenarios(missing_poll_hints="no"),  # type: ignore[arg-type]
            "missing_poll_hints='no' must be True or False.",
        ),
        (timelines(max_steps=0), "max_steps=0 must be at least 1."),
        (
            timelines(kinds=("time", "ticks")),
            "kinds contains the unknown choice 'ticks'; choose from 'time', 'polls'.",
        ),
        (fault_plans(min_faults=2, max_faults=1), "Cannot have max_faults=1 < min_faults=2."),
        (fault_plans(jobs=0), "jobs=0 must be at least 1."),
        (retry_after_values(min_delay=5, max_delay=2), "Cannot have max_delay=2 < min_delay=5."),
        (
            retry_after_values(min_delay=0.2, max_delay=0.5),
            "There is no whole second between min_delay=0.2 and max_delay=0.5; widen the range"
            " or use forms=('ms',).",
        ),
        (
            retry_after_values(max_delay=-1),
            "max_delay=-1 must be a non-negative number of seconds or a duration such as '10m'.",
        ),
        (
            webhook_plans(url="ftp://example.com"),
            "url='ftp://example.com' must be None or an http:// or https:// URL.",
        ),
        (webhook_plans(max_duplicates=-2), "max_duplicates=-2 must be at least 0."),
        (webhook_plans(misbehave="yes"), "misbehave='yes' must be True or False."),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_raise_invalid_argument_when_drawn(
    strategy: st.SearchStrategy[Any], message: str
) -> None:
    with pytest.raises(InvalidArgument) as raised:
        find(strategy, lambda _: True, settings=settings(database=None))
    assert str(raised.value) == message


def test_null_poll_hints_only_when_asked() -> None:
    hints: set[float | None] = set()

    @settings(QUIET, max_examples=150)
    @seed(3)
    @given(scenarios(), scenarios(missing_poll_hints=True))
    def collect(default: Scenario, hostile: Scenario) -> None:
        assert all(job.poll_after is not None for job in default.jobs)
        hints.update(job.poll_after for job in hostile.jobs)

    collect()
    assert None in hints
    assert 5.0 in hints


def test_duration_strings_are_accepted() -> None:
    found = _find(scenarios(max_duration="2m"), lambda s: (s.jobs[0].end_time or 0) > 100)
    assert found.jobs[0].end_time == 101.0


def test_reprs_show_how_the_strategy_was_built() -> None:
    assert repr(scenarios()) == "scenarios()"
    assert repr(scenarios(max_faults=1, fault_kinds=["reset"])) == (
        "scenarios(max_faults=1, fault_kinds=['reset'])"
    )
    assert repr(timelines(kinds=("polls",))) == "timelines(kinds=('polls',))"
    assert repr(fault_plans(max_faults=2)) == "fault_plans(max_faults=2)"
    assert repr(retry_after_values(forms=["ms"])) == "retry_after_values(forms=['ms'])"
    assert repr(webhook_plans(misbehave=False)) == "webhook_plans(misbehave=False)"


# -- from_type, through the hypothesis entry point ------------------------------------------------


@settings(QUIET, max_examples=10)
@given(st.from_type(Scenario))
def test_from_type_draws_scenarios(scenario: Scenario) -> None:
    assert parse_scenario(scenario.to_yaml()) == scenario


def test_the_entry_point_registers_lazily() -> None:
    code = (
        "import sys\n"
        "from hypothesis import strategies as st\n"
        "from fakeprovider.scenario import Scenario\n"
        "before = 'fakeprovider.strategies' in sys.modules\n"
        "strategy = st.from_type(Scenario)\n"
        "print(before, repr(strategy), 'fakeprovider.strategies' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False scenarios() True\n"


# -- keeping a falsifying scenario ----------------------------------------------------------------


def test_a_falsifying_example_reports_and_saves_the_minimal_scenario_as_yaml() -> None:
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "regressions" / "found.yaml"

        # resets only: the search is quick, and the shrink still has jobs, steps and the
        # fault's fields to simplify (test_a_fault_shrinks_to_a_503_on_the_first_status_read
        # shrinks across every fault kind)
        @settings(database=None, max_examples=200, phases=_FIND_PHASES)
        @given(scenarios(fault_kinds=["reset"]))
        def client_never_sees_a_reset(scenario: Scenario) -> None:
            note_scenario(scenario, save_to=target)
            assert not any(f.action == "reset" for f in scenario.faults)

        with pytest.raises(AssertionError) as raised:
            client_never_sees_a_reset()
        notes = "\n".join(getattr(raised.value, "__notes__", []))
        minimal = (
            "jobs:\n"
            "- timeline:\n"
            "  - status: succeeded\n"
            "name: generated\n"
            "faults:\n"
            "- name: reset-1\n"
            "  route: status\n"
            "  nth: 1\n"
            "  action: reset\n"
        )
        assert minimal in notes
        assert "# A fakeprovider scenario found by Hypothesis." in notes
        assert target.read_text() == scenario_yaml(parse_scenario(minimal))
        assert cli_main(["validate", str(target)]) == 0


def test_note_scenario_outside_a_test_is_an_error() -> None:
    with pytest.raises(InvalidArgument):
        note_scenario(Scenario(jobs=(JobSpec(timeline=(Step(status="succeeded"),)),)))


# -- the real server --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Any:
    provider = FakeProvider("slow-success")
    with ServerThread(provider) as running:
        yield running


def test_generated_scenarios_play_on_the_real_server(server: ServerThread) -> None:
    @settings(database=None, deadline=None, max_examples=15)
    @given(
        scenarios(
            max_duration=1,
            fault_kinds=["server_error", "rate_limited", "reset", "lose_response"],
            timeline_kinds=["polls"],
        )
    )
    def plays(scenario: Scenario) -> None:
        with httpx.Client(base_url=server.url, timeout=5) as client:
            loaded = client.put("/__admin/scenario", content=scenario.to_yaml())
            assert loaded.status_code == 200, loaded.text
            seen: list[int | None] = []
            for _ in range(8):
                try:
                    seen.append(client.post("/v1/jobs", json={"prompt": "p"}).status_code)
                except httpx.TransportError:
                    seen.append(None)  # a scripted reset or lost response
            journal = client.get("/__admin/journal").json()
        submits = [e for e in journal if e["kind"] == "submit"]
        assert [e["status_code"] for e in submits] == seen
        assert {e["fault"] for e in submits} <= {f.name for f in scenario.faults} | {None}

    plays()
