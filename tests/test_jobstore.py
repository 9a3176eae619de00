"""The job store: the in-memory default, and any other store plugged into the engine."""

from __future__ import annotations

import re
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
