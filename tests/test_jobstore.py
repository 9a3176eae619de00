"""The job store: the in-memory default, and any other store plugged into the engine."""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from fakeprovider.clock import DEFAULT_EPOCH
from fakeprovider.engine import Engine
from fakeprovider.jobstore import Job, JobStore, MemoryJobStore
from fakeprovider.messages import Request
from fakeprovider.scenario import parse_scenario

SCENARIO = """
jobs:
  - timeline:
      - status: queued
      - {at: 10s, status: processing}
      - {at: 30s, status: succeeded}
"""


def job(job_id: str, credential: str | None = "key") -> Job:
    spec = parse_scenario(SCENARIO).jobs[0]
    return Job(job_id, 0, spec, 0.0, {}, "digest", credential, None)


def test_a_memory_store_finds_jobs_by_id_and_walks_them_oldest_first() -> None:
    store = MemoryJobStore()
    first, second = job("job_b"), job("job_a")
    store.add(first)
    store.add(second)
    assert store.get("job_a") is second
    assert store["job_b"] is first
    assert store.get("job_c") is None
    with pytest.raises(KeyError):
        store["job_c"]
    assert [j.id for j in store] == ["job_b", "job_a"]
    assert len(store) == 2


def test_a_memory_store_finds_a_job_by_its_idempotency_key_per_credential() -> None:
    store = MemoryJobStore()
    keyed = job("job_1", credential="alice")
    store.add(keyed, "key-1")
    store.add(job("job_2", credential="alice"))
    assert store.by_idempotency_key("alice", "key-1") is keyed
    assert store.by_idempotency_key("bob", "key-1") is None
    assert store.by_idempotency_key("alice", "key-2") is None


def test_a_memory_store_refuses_a_second_job_with_the_same_id() -> None:
    store = MemoryJobStore()
    store.add(job("job_1"))
    message = "A job called 'job_1' is already kept; job ids are unique."
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        store.add(job("job_1"))
    assert len(store) == 1


class ListStore:
    """Another store: jobs in a list, looked up by scanning (what a test needs, not fast)."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.keys: list[tuple[str | None, str, Job]] = []

    def get(self, job_id: str) -> Job | None:
        return next((j for j in self.jobs if j.id == job_id), None)

    def __getitem__(self, job_id: str) -> Job:
        found = self.get(job_id)
        if found is None:
            raise KeyError(job_id)
        return found

    def add(self, job: Job, idempotency_key: str | None = None) -> None:
        self.jobs.append(job)
        if idempotency_key is not None:
            self.keys.append((job.credential, idempotency_key, job))

    def by_idempotency_key(self, credential: str | None, key: str) -> Job | None:
        return next((j for c, k, j in self.keys if (c, k) == (credential, key)), None)

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)


def play(engine: Engine) -> list[tuple[int, str | None, str | None]]:
    """Two submits (one replayed by its idempotency key), a status read and a list."""
    requests = [
        (0.0, Request("submit", "POST", "/v1/jobs", body={"p": 1}, idempotency_key="k1")),
        (1.0, Request("submit", "POST", "/v1/jobs", body={"p": 2})),
        (2.0, Request("submit", "POST", "/v1/jobs", body={"p": 1}, idempotency_key="k1")),
        (12.0, Request("list", "GET", "/v1/jobs")),
    ]
    shown: list[tuple[int, str | None, str | None]] = []
    for now, request in requests:
        reply = engine.handle(request, now)
        shown.append(
            (reply.status_code, reply.job and reply.job.id, reply.job and reply.job.status)
        )
        shown.extend((0, view.id, view.status) for view in reply.jobs)
    first = shown[0][1]
    assert first is not None
    status = engine.handle(Request("status", "GET", "/v1/jobs/x", job_id=first), 31.0)
    assert status.job is not None
    shown.append((status.status_code, status.job.id, status.job.status))
    return shown


def test_an_engine_plays_the_same_on_another_store_and_keeps_its_jobs_there() -> None:
    store = ListStore()
    checked: JobStore = store  # the protocol is all the engine asks for
    custom = Engine(parse_scenario(SCENARIO), epoch=DEFAULT_EPOCH, store=checked)
    default = Engine(parse_scenario(SCENARIO), epoch=DEFAULT_EPOCH)
    shown = play(custom)
    assert shown == play(default)
    first, second = shown[0][1], shown[1][1]
    assert shown == [
        (202, first, "queued"),
        (202, second, "queued"),
        (202, first, "queued"),
        (200, None, None),
        (0, first, "processing"),
        (0, second, "processing"),
        (200, first, "succeeded"),
    ]
    assert [(j.id, j.status) for j in store.jobs] == [(first, "succeeded"), (second, "processing")]
    assert [(c, k, j.id) for c, k, j in store.keys] == [(None, "k1", first)]
    assert [view.id for view in custom.jobs] == [first, second]


def _held(value: object) -> Iterator[object]:
    """``value`` and everything it holds: container items, dataclass fields, transitively."""
    yield value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _held(key)
            yield from _held(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _held(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _held(getattr(value, f.name))


def _submitted(engine: Engine, count: int) -> list[Job]:
    for number in range(count):
        body = {"prompt": f"p{number}", "options": {"sizes": [1, 2], "seed": None}}
        engine.handle(Request("submit", "POST", "/v1/jobs", body=body, client="c"), 1.0 + number)
    return list(engine._jobs)


def test_the_collector_never_tracks_a_job() -> None:
    pytest.importorskip("msgspec")
    jobs = _submitted(Engine(parse_scenario(SCENARIO)), 3)
    assert len(jobs) == 3
    assert not any(gc.is_tracked(j) for j in jobs)


def test_nothing_a_job_holds_can_refer_back_to_a_job() -> None:
    # why the collector may skip jobs: a job is in no reference cycle
    jobs = _submitted(Engine(parse_scenario(SCENARIO)), 3)
    names = [f.name for f in dataclasses.fields(JobFields)]
    assert names == list(Job.__annotations__)
    for j in jobs:
        held = [v for name in names for v in _held(getattr(j, name))]
        assert not any(isinstance(v, Job) for v in held)
        assert {type(v).__name__ for v in held} <= {
            "str", "int", "float", "bool", "NoneType", "dict", "list", "tuple",
            "JobSpec", "Step", "Result", "JobError",
        }  # fmt: skip


@dataclasses.dataclass
class JobFields:
    """``Job``'s fields, in order (what the tests compare the record with)."""

    id: str
    spec_index: int
    spec: object
    created_at: float
    request: object
    digest: str
    credential: str | None
    callback_url: str | None
    step: int = 0
    since: float = 0.0
    polls: int = 0
    cancelled: bool = False
    scheduled: bool = False
    started: float | None = None
    number: int = 0
    due: float = -math.inf


WITHOUT_MSGSPEC = """
import sys
sys.modules["msgspec"] = None  # as where it is not installed
import dataclasses, gc, json
from fakeprovider.jobstore import Job
from fakeprovider.engine import Engine
from fakeprovider.messages import Request
from fakeprovider.scenario import parse_scenario
engine = Engine(parse_scenario(sys.argv[1]))
for now in (1.0, 2.0):
    engine.handle(Request("submit", "POST", "/v1/jobs", body={"p": now}), now)
engine.handle(Request("status", "GET", "/v1/jobs/x", job_id=next(iter(engine._jobs)).id), 15.0)
job = next(iter(engine._jobs))
print(json.dumps({
    "dataclass": dataclasses.is_dataclass(Job),
    "fields": [f.name for f in dataclasses.fields(Job)],
    "tracked": gc.is_tracked(job),
    "repr": repr(Job("j", 0, None, 1.0, {}, "d", None, None)),
    "jobs": [repr(view) for view in engine.jobs],
}))
"""


def test_without_msgspec_a_job_is_a_dataclass_with_the_same_fields_and_plays_the_same() -> None:
    pytest.importorskip("msgspec")
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_MSGSPEC, SCENARIO],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    engine = Engine(parse_scenario(SCENARIO))
    for now in (1.0, 2.0):
        engine.handle(Request("submit", "POST", "/v1/jobs", body={"p": now}), now)
    first = next(iter(engine._jobs)).id
    engine.handle(Request("status", "GET", "/v1/jobs/x", job_id=first), 15.0)
    assert found == {
        "dataclass": True,
        "fields": [f.name for f in dataclasses.fields(JobFields)],
        "tracked": True,
        "repr": repr(Job("j", 0, None, 1.0, {}, "d", None, None)),  # type: ignore[arg-type]
        "jobs": [repr(view) for view in engine.jobs],
    }
