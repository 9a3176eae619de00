"""FakeProvider's configuration: made once, passed to every part at construction, never patched."""

from __future__ import annotations

import dataclasses
import math
import re
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider.clock import VirtualClock
from fakeprovider.http import (
    NO_BODY,
    HttpRequest,
    HttpResponse,
    format_http_date,
    is_safe_header_value,
    safe_header_value,
    wire_problem,
)
from fakeprovider.messages import ApiError, StateChange, default_job_id
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import parse_scenario
from fakeprovider.settings import RunSettings
from tests.thorough import thorough

TIMED = """
seed: 3
jobs:
  - timeline:
      - status: queued
      - {at: 10s, status: processing}
      - {at: 20s, status: succeeded}
"""

WEBHOOKS = """
webhooks:
  url: http://127.0.0.1:9/hooks
"""


def submit(provider: FakeProvider) -> str:
    headers = {"content-type": "application/json"}
    http = HttpRequest("POST", "/v1/jobs", headers=headers, body=b'{"prompt": "a cat"}')
    reply, _ = provider.receive(http)
    assert reply.job is not None
    return reply.job.id


def test_the_provider_settings_hold_its_arguments_and_its_clocks_epoch() -> None:
    clock = VirtualClock(epoch=1_000.0)
    provider = FakeProvider(
        parse_scenario(TIMED), clock=clock, time_scale=0.5, seed=8, dialect="replicate"
    )
    assert provider.settings == RunSettings(
        epoch=1_000.0, time_scale=0.5, seed=8, dialect="replicate"
    )


def test_every_dialect_the_provider_makes_is_made_with_its_settings() -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock(epoch=1_000.0))
    assert provider.dialect.settings is provider.settings
    assert provider.dialect.epoch == 1_000.0
    provider.load("quick-preview")
    assert provider.dialect.settings is provider.settings


def test_a_dialects_epoch_cannot_be_set_after_it_is_made() -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock())
    with pytest.raises(AttributeError):
        provider.dialect.epoch = 5.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        provider.settings.time_scale = 2.0  # type: ignore[misc]


def test_the_scenario_plays_at_the_settings_time_scale_and_seed() -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock(), time_scale=0.5, seed=8)
    assert [step.at for step in provider.scenario.jobs[0].timeline] == [None, 5.0, 10.0]
    assert provider.scenario.seed == 8
    assert provider.run_header()["time_scale"] == 0.5


def test_a_replicate_wait_runs_at_the_providers_time_scale() -> None:
    provider = FakeProvider(
        parse_scenario(TIMED), clock=VirtualClock(), dialect="replicate", time_scale=0.1
    )
    http = HttpRequest(
        "POST",
        "/v1/predictions",
        headers={"prefer": "wait=5", "content-type": "application/json"},
        body=b'{"version": "v", "input": {"prompt": "a cat"}}',
    )
    reply, response = provider.receive(http)
    # 5 s at time scale 0.1 is 0.5 s: the answer comes then, before the job ends at 2 s
    assert (response.status, reply.request.hold, reply.delay) == (201, 0.5, 0.5)
    assert reply.job is not None
    assert reply.job.status == "queued"


def test_observers_hear_every_state_change_across_resets_until_they_stop() -> None:
    clock = VirtualClock()
    provider = FakeProvider(parse_scenario(TIMED), clock=clock)
    heard: list[StateChange] = []
    forget = provider.observe(heard.append)
    first = submit(provider)
    provider.reset()  # a new engine: made with the same observers
    second = submit(provider)
    clock.advance(10.0)
    provider.advance()
    forget()
    clock.advance(10.0)
    provider.advance()
    assert [(c.job_id, c.status, c.at) for c in heard] == [
        (first, "queued", 0.0),
        (second, "queued", 0.0),
        (second, "processing", 10.0),
    ]
    assert [(c.job_id, c.status) for c in provider.engine.changes] == [
        (second, "queued"),
        (second, "processing"),
        (second, "succeeded"),
    ]


@pytest.mark.parametrize("dialect", ["generic", "ark", "replicate"])
def test_job_ids_are_the_dialects_own_and_the_generic_ones_made_without_its_method(
    dialect: str,
) -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock(), dialect=dialect)
    made = provider.dialect.new_job_id
    if dialect == "generic":
        assert provider.engine._new_id is default_job_id
    else:
        assert provider.engine._new_id == made
    assert [provider.engine._new_id(7, n) for n in (1, 2)] == [made(7, 1), made(7, 2)]


def test_the_engine_calls_no_observer_one_observer_itself_or_every_observer_in_order() -> None:
    clock = VirtualClock()
    provider = FakeProvider(parse_scenario(TIMED), clock=clock)
    assert provider.engine.on_change is None  # nobody listens: a submit calls nothing
    heard: list[tuple[str, str]] = []
    first = provider.observe(lambda change: heard.append(("first", change.status)))
    assert provider.engine.on_change is not None
    assert provider.engine.on_change is not provider._changed  # the observer itself
    submit(provider)
    second = provider.observe(lambda change: heard.append(("second", change.status)))
    provider.reset()
    submit(provider)
    first()
    submit(provider)
    second()
    assert provider.engine.on_change is None
    submit(provider)
    assert heard == [
        ("first", "queued"),
        ("first", "queued"),
        ("second", "queued"),
        ("second", "queued"),
    ]


def test_an_observer_of_webhooks_only_hears_the_runs_whose_scenario_has_webhooks() -> None:
    clock = VirtualClock()
    provider = FakeProvider(parse_scenario(TIMED), clock=clock)
    heard: list[str] = []
    everything: list[str] = []
    forget = provider.observe(lambda change: heard.append(change.job_id), webhooks_only=True)
    provider.observe(lambda change: everything.append(change.job_id))
    quiet = submit(provider)
    provider.load(parse_scenario(TIMED + WEBHOOKS))
    loud = submit(provider)
    provider.load(parse_scenario(TIMED))
    submit(provider)
    provider.load(parse_scenario(TIMED + WEBHOOKS))
    forget()
    submit(provider)
    assert heard == [loud]
    assert len(everything) == 4
    assert everything[0] == quiet


def test_an_observer_given_twice_is_forgotten_whole() -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock())
    heard: list[StateChange] = []

    def observer(change: StateChange) -> None:
        heard.append(change)

    forget = provider.observe(observer)
    provider.observe(observer)
    forget()
    submit(provider)
    assert heard == []
    assert provider.engine.on_change is None


def test_a_provider_read_through_advance_keeps_every_change_of_a_new_run_until_read() -> None:
    provider = FakeProvider(parse_scenario(TIMED + WEBHOOKS), clock=VirtualClock())
    provider.advance(0)  # someone (the webhook dispatcher) reads the changes
    provider.reset()
    made = [submit(provider) for _ in range(1500)]  # more than an engine keeps unread
    engine, changes, _ = provider.advance(0)
    assert [(c.job_id, c.status) for c in changes] == [(job_id, "queued") for job_id in made]
    assert provider.advance(1500)[1] == []
    later = [submit(provider) for _ in range(600)]  # kept until read, then let go
    assert [c.job_id for c in provider.advance(1500)[1]] == later
    assert provider.advance(2100)[1] == []
    assert engine.change_count == 2100
    assert 64 <= len(engine.changes) < 2 * 64 + 64
    unread = FakeProvider(parse_scenario(TIMED), clock=VirtualClock())  # nobody reads them
    for _ in range(2100):
        submit(unread)
    assert unread.engine.change_count == 2100
    assert 64 <= len(unread.engine.changes) < 2 * 64 + 64


def test_a_provider_followed_before_its_first_read_keeps_every_change_until_read() -> None:
    provider = FakeProvider(parse_scenario(TIMED + WEBHOOKS), clock=VirtualClock())
    early = submit(provider)
    provider.follow_changes()  # a webhook dispatcher starting: its first read may come late
    made = [early] + [submit(provider) for _ in range(2100)]
    changes = provider.advance(0)[1]
    assert [(c.job_id, c.status) for c in changes] == [(job_id, "queued") for job_id in made]
    provider.reset()  # and so is every later run, from its start
    again = [submit(provider) for _ in range(2100)]
    assert [c.job_id for c in provider.advance(0)[1]] == again


def test_a_followed_provider_keeps_no_change_for_a_reader_while_no_webhooks_are_sent() -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock())  # no webhooks
    provider.follow_changes()  # the dispatcher reads nothing while there are no webhooks
    provider.reset()
    for _ in range(2100):
        submit(provider)
    assert 64 <= len(provider.engine.changes) < 2 * 64 + 64


def test_load_with_other_settings_plays_that_run_and_the_next_with_them() -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock(), time_scale=0.5)
    faster = dataclasses.replace(provider.settings, time_scale=0.1, dialect="replicate")
    provider.load(parse_scenario(TIMED), settings=faster)
    assert provider.settings is faster
    assert provider.dialect.settings is faster
    assert (provider.dialect.name, provider.scenario.dialect) == ("replicate", "replicate")
    assert [step.at for step in provider.scenario.jobs[0].timeline] == [None, 1.0, 2.0]
    provider.load("quick-preview")
    assert (provider.settings, provider.run_header()["time_scale"]) == (faster, 0.1)


def test_load_refuses_settings_with_another_epoch_than_the_clocks() -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock(epoch=1_000.0))
    message = (
        "The settings' epoch=0.0 is not the clock's (1000.0);"
        " make them with dataclasses.replace(provider.settings, ...)."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        provider.load("quick-preview", settings=RunSettings())
    assert provider.scenario.name == "unnamed"


@thorough(200, deadline=None)
@given(
    epoch=st.sampled_from([0.0, 1_700_000_000.0, 1_700_000_000.25]),
    readings=st.lists(
        st.one_of(
            st.floats(-5.0, 5.0), st.sampled_from([0.0, 0.999999, 1.0, 1.0000001, 2.5, -0.5])
        ),
        max_size=12,
    ),
)
def test_each_date_is_its_replys_second_whatever_the_answers_before(
    epoch: float, readings: list[float]
) -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock(epoch=epoch))
    for reading in readings:
        reply = SimpleNamespace(respond_at=reading)
        shown = provider.date_header(reply)  # type: ignore[arg-type]
        assert shown == format_http_date(math.floor(epoch + reading))


@pytest.mark.parametrize("reading", [math.nan, math.inf])
def test_a_date_for_no_time_raises_as_flooring_it_does(reading: float) -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock())
    provider.date_header(SimpleNamespace(respond_at=0.5))  # type: ignore[arg-type]
    with pytest.raises((ValueError, OverflowError)):
        provider.date_header(SimpleNamespace(respond_at=reading))  # type: ignore[arg-type]


def _checked_in_full(
    provider: FakeProvider, http: HttpRequest, refused_method: bool, response: HttpResponse
) -> Any:
    """What ``receive`` makes of a rendered answer, every check made (the general path)."""
    if response.status == 405 and refused_method:
        allowed = ", ".join(provider.dialect.allowed_methods(http.path))
        response = dataclasses.replace(response, headers=(*response.headers, ("allow", allowed)))
    if response.headers and not all(is_safe_header_value(v) for _, v in response.headers):
        headers = tuple((name, safe_header_value(v)) for name, v in response.headers)
        response = dataclasses.replace(response, headers=headers)
    if response.status in NO_BODY and response.body:
        response = dataclasses.replace(response, body=b"", media_type=None)
    problem = wire_problem(response)
    return (response.status, response.body, response.headers, problem)


@thorough(300, deadline=None)
@given(
    status=st.one_of(st.sampled_from([200, 202, 204, 304, 405, 599, 600, 99]), st.integers(0, 700)),
    body=st.sampled_from([b"", b"{}"]),
    headers=st.lists(
        st.tuples(st.sampled_from(["x-a", "Bad Name", "content-length"]), st.text(max_size=3)),
        max_size=2,
    ),
    method=st.sampled_from(["GET", "DELETE"]),
)
def test_an_answer_is_checked_as_every_check_would_check_it(
    status: int, body: bytes, headers: list[tuple[str, str]], method: str
) -> None:
    provider = FakeProvider(parse_scenario(TIMED), clock=VirtualClock())
    rendered = HttpResponse(status, body, "application/json", tuple(headers))
    provider.dialect.render = lambda reply, http: rendered  # type: ignore[method-assign]
    http = HttpRequest(method, "/v1/jobs")
    reply, response = provider.receive(http)
    refused_method = reply.request.problem_code == "method_not_allowed"
    assert refused_method == (method == "DELETE")
    status_, body_, headers_, problem = _checked_in_full(provider, http, refused_method, rendered)
    if problem is None:
        assert (response.status, response.body, response.headers) == (status_, body_, headers_)
        assert reply.error is None or method == "DELETE"
        if not headers and 200 <= status <= 599 and status not in (204, 304, 405):
            assert response is rendered
    else:
        assert (response.status, reply.error) == (
            500,
            ApiError("unsendable_answer", "unsendable answer"),
        )
