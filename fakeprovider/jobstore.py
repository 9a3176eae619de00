"""Where the engine keeps its jobs: the ``JobStore`` interface and the in-memory default.

The engine decides; a store only keeps. ``Job`` is a job's state as the engine leaves it after
each decision; the engine finds a job by id or by the idempotency key it was created with, adds
a job when a submit creates one, and walks every job (oldest first) to answer a list. A store
that keeps jobs elsewhere (shared by several server processes, say) plugs in through
``Engine(store=...)`` without a change to the engine. Every method is O(1) but iteration,
and iteration is in the order jobs were added, so a run stays deterministic.

A store hands out the records themselves: the engine changes a job it got from ``get`` in place
(its step, ``since``, ``polls``...), so a store that keeps copies elsewhere must hand out
records that write their changes through. Only jobs live here: the engine's schedule of timed
steps, its concurrency slots, rate-limit buckets and fault counts are still its own, per engine.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from .scenario import TERMINAL_STATUSES, JobSpec

__all__ = ["Job", "JobStore", "MemoryJobStore"]


class _PlainRecord:
    """What ``Job`` takes from ``msgspec.Struct`` where msgspec is not installed: its subclass
    becomes a dataclass (the same fields, defaults, ``__init__``, ``__eq__`` and ``__repr__``),
    which the collector tracks."""

    def __init_subclass__(cls, **options: object) -> None:
        super().__init_subclass__()
        dataclasses.dataclass(cls)


try:
    from msgspec import Struct as _Record
except ImportError:  # pragma: no cover - tests/test_jobstore.py runs this in a child process
    _Record = _PlainRecord  # type: ignore[assignment,misc]


class Job(_Record, gc=False):
    """One job's state: what it was created from, and how far along its timeline it is.

    A ``msgspec.Struct`` the garbage collector never tracks (``gc=False``; a dataclass where
    msgspec is missing): a server keeps one per job it ever accepted, and the collector's
    middle and old generations would visit every one of them on every pass (0.75 us a job: 24
    ms for 30,000 jobs, a pause that set the submits' p99). Safe, because a ``Job`` is never
    part of a reference cycle: it holds atoms (strings, numbers, booleans, None), its
    scenario's ``JobSpec`` (frozen, made from the scenario document before any job) and
    ``request``, the engine's own copy of a submit's decoded JSON body; none of them can refer
    to a job. (A cycle through an untracked object would only be kept, never freed early.)
    """

    id: str
    spec_index: int
    spec: JobSpec
    created_at: float
    request: Mapping[str, Any]
    digest: str
    credential: str | None
    callback_url: str | None
    step: int = 0
    since: float = 0.0
    polls: int = 0
    cancelled: bool = False
    #: True while the job has an entry in the engine's heap of timed steps.
    scheduled: bool = False
    #: The clock reading its timeline counts from: its creation, or for a job accepted over
    #: the concurrency limit (throttled) the instant a slot freed; None while it waits.
    started: float | None = None
    #: How many jobs the engine created before this one (its place in the order of creation).
    number: int = 0
    #: While ``scheduled``: the clock reading of the timed step the engine's heap holds it for,
    #: until a step is taken (then -inf): before it, nothing can move the job on by time;
    #: +inf once the job, started, is at the end of its timeline (nothing moves it any more).
    due: float = -math.inf

    @property
    def start(self) -> float:
        return self.started if self.started is not None else self.created_at

    @property
    def status(self) -> str:
        if self.cancelled:
            return "cancelled"
        return _status_at(self.spec, self.step)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


def _status_at(spec: JobSpec, step: int) -> str:
    for index in range(step, -1, -1):
        status = spec.timeline[index].status
        if status is not None:
            return status
    raise AssertionError("validated timelines start with a status")  # pragma: no cover


class JobStore(Protocol):
    """What the engine needs from wherever its jobs are kept (one store per run)."""

    def get(self, job_id: str) -> Job | None:
        """The job called ``job_id``, or None when there is none."""
        ...

    def __getitem__(self, job_id: str) -> Job:
        """The job called ``job_id`` (``KeyError`` when there is none)."""
        ...

    def add(self, job: Job, idempotency_key: str | None = None) -> None:
        """Keep ``job`` (a new id), findable by ``idempotency_key`` for its credential if given."""
        ...

    def by_idempotency_key(self, credential: str | None, key: str) -> Job | None:
        """The job ``credential`` created with ``key``, or None when it created none."""
        ...

    def __iter__(self) -> Iterator[Job]:
        """Every job, in the order they were added."""
        ...

    def __len__(self) -> int: ...


class MemoryJobStore:
    """Jobs in this process's memory: what every engine uses unless given another store."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}  # insertion order is the order jobs were added
        self._keys: dict[tuple[str | None, str], Job] = {}

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def __getitem__(self, job_id: str) -> Job:
        return self._jobs[job_id]

    def add(self, job: Job, idempotency_key: str | None = None) -> None:
        if job.id in self._jobs:
            raise ValueError(f"A job called {job.id!r} is already kept; job ids are unique.")
        self._jobs[job.id] = job
        if idempotency_key is not None:
            self._keys[(job.credential, idempotency_key)] = job

    def by_idempotency_key(self, credential: str | None, key: str) -> Job | None:
        return self._keys.get((credential, key))

    def __iter__(self) -> Iterator[Job]:
        return iter(self._jobs.values())

    def __reversed__(self) -> Iterator[Job]:
        # optional for a store: with it, a page of the newest jobs reads only those
        return reversed(self._jobs.values())

    def __len__(self) -> int:
        return len(self._jobs)

    def __repr__(self) -> str:
        return f"<MemoryJobStore {len(self._jobs)} jobs>"
