"""The webhook dispatcher: sends a ``FakeProvider``'s planned deliveries, on the scenario clock.

It runs in its own thread with its own asyncio event loop and ``httpx.AsyncClient`` (made,
and httpx imported, once a scenario has webhooks: one without pays for neither), apart
from the server's loop, so nothing a receiver does (answer slowly, hang, refuse connections)
can hold up a status response: the only thing it shares with request handling is the
provider's lock, held for microseconds while it asks the engine which state changes are due.

Each loop turn (every ``tick`` seconds while jobs change or sends are in flight, sooner when a
request made a change that may send; on the machine's clock, once nothing changes, only when a
send or a timed step is due or the next change comes) it brings
every job up to the clock (``FakeProvider.advance``), plans the sends of the new state changes
(``webhooks.plan_change``, with the provider's dialect deciding which events its provider
sends) and starts the sends that are due; the dialect shapes each send's body and headers
(``Dialect.webhook_message``). The receiver's answer decides:
2xx done; 410 done, and nothing more is sent to that URL until the next reset; 429, 5xx,
timeouts and connection errors retried after ``webhooks.backoff`` (or the receiver's
``Retry-After`` if longer) up to ``max_attempts``; any other answer done. Every attempt is a
journal entry of kind ``webhook``.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from .clock import RealClock
from .engine import Engine
from .http import parse_retry_after
from .journal import Entry, RetryAfterRecord
from .messages import StateChange
from .provider import FakeProvider
from .scenario import Webhooks
from .webhooks import Delivery, Outgoing, backoff, event_for, is_allowed_target, plan_change

if TYPE_CHECKING:
    import httpx

__all__ = ["Dispatcher", "redact_url"]

log = logging.getLogger("fakeprovider.webhooks")

#: Bytes of a receiver's answer read at most (the rest is ignored).
_MAX_ANSWER = 65_536
#: Statuses whose event ``Dispatcher._turn`` keeps the listing of at most (the engine's few).
_STATUSES_KEPT = 64
#: A job's earlier changes, for a config without ``reorder`` (none are kept).
_NO_CHANGES: tuple[StateChange, ...] = ()


@dataclass(frozen=True)
class _Attempt:
    delivery: Delivery
    attempt: int
    at: float
    generation: int


class Dispatcher:
    """Sends the webhooks of ``provider`` from a background thread (use as a context manager).

    ``allow_webhook_hosts`` adds hosts besides loopback addresses and ``localhost`` that
    deliveries may go to (the provider's own list counts too). ``tick`` bounds how long a
    change of a virtual clock (any clock but the machine's own monotonic one) can go
    unnoticed; on the machine's clock, after a turn that found nothing new, the loop sleeps
    until something is due (at most ``REAL_TICK``) and the next state change wakes it, so an
    idle server is not woken 50 times a second and a busy one is not woken per request.
    ``loop_factory`` makes the thread's event loop (``asyncio.Runner``'s; asyncio's own by
    default): ``ServerThread`` and ``serve_forever`` give the one they serve on (uvloop's).
    """

    #: The longest the loop sleeps on the machine's monotonic clock, which cannot jump: every
    #: change that may need it sooner wakes it.
    REAL_TICK = 1.0

    def __init__(
        self,
        provider: FakeProvider,
        *,
        allow_webhook_hosts: Iterable[str] = (),
        tick: float = 0.02,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
    ) -> None:
        self.provider = provider
        #: What makes the thread's event loop (asyncio's own when None): a server on uvloop
        #: gives uvloop's, whose iteration (a turn every tick under a stream of submits) costs
        #: a fraction of the pure-Python loop's.
        self._loop_factory = loop_factory
        self.allow_webhook_hosts = frozenset(allow_webhook_hosts)
        self.tick = tick
        #: Whether the loop sleeps past the next tick: then the next state change wakes it.
        self._asleep = False
        self._thread = threading.Thread(target=self._run, name="fakeprovider webhooks", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Resolved when the loop is to end (``_step`` saw ``stop()``, or a turn raised what
        #: ``_safe_turn`` lets through).
        self._done: asyncio.Future[None] | None = None
        #: The next turn's timer, and whether a wake has brought the next turn forward to the
        #: loop's next iteration already (the wakes before it share that turn).
        self._next: asyncio.TimerHandle | None = None
        self._soon = False
        self._started = threading.Event()
        self._stopping = False
        self._order = itertools.count()
        self._queue: list[tuple[float, int, _Attempt]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._engine: Engine | None = None
        self._generation = 0
        self._cursor = 0
        self._history: dict[str, list[StateChange]] = {}
        #: The webhooks config the turns last planned for, and whether it lists the event of
        #: a change to each status seen (``event_for(status) in config.events``), by status.
        self._listed: tuple[Webhooks | None, dict[str, bool]] = (None, {})
        self._gone: set[str] = set()
        self._forget: Callable[[], None] | None = None
        self._client: httpx.AsyncClient | None = None
        self._failed_turns = 0
        self.error: BaseException | None = None

    # -- control --------------------------------------------------------------------------

    def start(self, timeout: float = 5.0) -> Dispatcher:
        # a state change that may send wakes the loop, so a delivery due now is not left for
        # the tick
        # (only in runs with webhooks: in the others ``_changed`` does nothing, and a submit
        # would call it for nothing)
        self._forget = self.provider.observe(self._changed, webhooks_only=True)
        self.provider.follow_changes()  # kept for this loop until read, however late it reads
        self._thread.start()
        if not self._started.wait(timeout):  # pragma: no cover - a broken event loop
            raise RuntimeError(f"the webhook dispatcher did not start: {self.error!r}")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop sending (sends in flight are cancelled) and join the thread."""
        self._stopping = True
        if self._forget is not None:
            self._forget()
            self._forget = None
        self.wake()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _changed(self, change: StateChange) -> None:
        # Only a change ``plan_change`` can send for (a URL and a listed event) wakes the loop;
        # the others are planned at the next tick. Waking this thread for every submit took
        # the GIL from the server's loop: a third of a submit's time under load.
        config, job = self.provider.scenario.webhooks, change.job
        if config is None or job is None or (job.callback_url or config.url) is None:
            # (a job no webhook can be sent for: its changes are not kept for the loop, nor
            # its timed steps waited for, so a stream of its submits wakes nothing)
            return
        if f"job.{change.status}" in config.events:
            self.wake()  # (``event_for``'s name of the change's event, written in place)
            return
        # a change that sends nothing may still make a step due (the engine schedules a job's
        # next step after it announces the change): a loop asleep past the next tick looks now,
        # and then ticks while changes keep coming, so a stream of requests wakes it once
        # (what ``_woken_early`` does, one call less for every submit)
        if self._asleep:
            self._asleep = False
            self.wake()

    def wake(self) -> None:
        """Look for due work now rather than at the next tick (safe from any thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._woken)

    @property
    def idle(self) -> bool:
        """True when no send is scheduled or in flight and every state change that has happened
        so far has been planned (more may come from later changes)."""
        if self._queue or self._tasks:
            return False
        provider = self.provider
        if provider.scenario.webhooks is None:
            return True
        engine = provider.engine
        if engine is not self._engine or engine.sendable_count > self._cursor:
            return False  # a change the loop has not planned yet
        due = engine.next_due(sendable_only=True)
        return due is None or due > provider.clock.now()

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait (in real time, at most ``timeout`` s) until ``idle``; return whether it is."""
        pause = threading.Event()
        for _ in range(max(1, round(timeout / 0.01))):
            if self.idle:
                return True
            pause.wait(0.01)
        return self.idle

    def __enter__(self) -> Dispatcher:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            with asyncio.Runner(loop_factory=self._loop_factory) as runner:
                runner.run(self._main())
        except BaseException as exc:  # surfaced through .error and /__admin/health
            self.error = exc
            self.provider.failures["webhooks"] = (
                f"webhooks are no longer sent: the dispatcher stopped on {type(exc).__name__}: {exc}"
            )
            log.exception("the webhook dispatcher crashed")

    async def _main(self) -> None:
        # Each turn is a callback of the loop (``_step``), the next one a timer it leaves,
        # which a wake brings forward: no task of its own, no event to wait on and one loop
        # iteration a turn (``asyncio.wait_for`` made a task, a timeout and its cancellation
        # every turn: under a stream of submits, a turn every tick, most of this thread's work)
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        self._loop = loop
        self._started.set()
        self._step()
        try:
            await self._done
        finally:
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            if self._client is not None:
                await self._client.aclose()

    def _step(self) -> None:
        """A turn (on the loop), and a timer for the next one after the wait it says (one
        timer at a time: this turn's replaces the last one's, fired or not)."""
        self._soon = False
        if self._next is not None:
            self._next.cancel()
            self._next = None
        done = self._done
        if done is None or done.done():
            return
        if self._stopping:
            done.set_result(None)
            return
        try:
            self._awake()
            wait = self._safe_turn()
        except BaseException as exc:  # (what ``_safe_turn`` lets through ends the loop)
            done.set_exception(exc)
            return
        loop = self._loop
        assert loop is not None
        self._next = loop.call_later(wait, self._step)

    def _woken(self) -> None:
        """A wake, on the loop: the next turn at the loop's next iteration, not at its timer."""
        if not self._soon:
            self._soon = True
            loop = self._loop
            assert loop is not None
            loop.call_soon(self._step)

    def _http(self) -> httpx.AsyncClient:
        """The client every send goes through, made at the first turn with webhooks to send:
        importing httpx and making a client (its TLS context loads the CA bundle) cost every
        server's start about a quarter of a second of CPU, for nothing when a scenario has no
        webhooks."""
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
        return self._client

    def _safe_turn(self) -> float:
        """``_turn``, but a bug in it costs that turn, not every webhook for the rest of the
        server's life: it is logged and the loop starts again from the current engine."""
        try:
            return self._turn()
        except Exception:
            self._failed_turns += 1
            if self._failed_turns & (self._failed_turns - 1) == 0:  # the 1st, 2nd, 4th, 8th...
                log.exception(
                    "the webhook dispatcher failed a turn (%d so far); it starts again from now",
                    self._failed_turns,
                )
            self._restart(self.provider.engine)
            return self.tick

    def _turn(self) -> float:
        """Plan new changes, start due sends; return how long to sleep (clock seconds)."""
        provider = self.provider
        config = provider.scenario.webhooks
        if provider.engine is not self._engine:
            self._restart(provider.engine)
        if config is None:  # nothing to plan; a load may bring webhooks, and then changes
            return self._sleep(self._cap(), bool(self._tasks), self._reloaded, 0.0)
        self._http()  # made before the first send is due, not while it waits
        # the engine the cursor counts in: a reset or load since the check above is told apart
        # under the provider's lock, and the new engine is left alone until the next turn
        engine, changes, next_due = provider.advance(self._cursor, self._engine, sendable_only=True)
        if engine is not self._engine:
            return 0.0
        self._cursor += len(changes)
        history, keep = self._history, config.reorder
        made_for, listed = self._listed
        if made_for is not config:
            listed = {}
            self._listed = (config, listed)
        quiet = config.url is None  # then a job without a callback_url never sends
        busy = False
        for change in changes:
            if change is None:  # (a quiet job's, let go: see ``Engine.changes_since``)
                continue
            if quiet and (change.job is None or change.job.callback_url is None):
                continue  # plan_change plans nothing for it, nor for a later change with it
            busy = True
            # only ``reorder`` sends a job's earlier changes again, so only it keeps them: a
            # server kept every change of every job (a view and two dicts each) for nothing,
            # and the collector's middle generation scanned them all under a stream of submits
            earlier: Sequence[StateChange] = (
                history.setdefault(change.job_id, []) if keep else _NO_CHANGES
            )
            status = change.status
            sends = listed.get(status)
            if sends is None:  # (a status's event, and whether it is listed, made once)
                if len(listed) >= _STATUSES_KEPT:
                    listed.clear()
                sends = listed[status] = event_for(status) in config.events
            if sends:  # plan_change plans nothing for the others
                planned = plan_change(
                    config, change, earlier, seed=provider.scenario.seed, shape=provider.dialect
                )
                for delivery in planned:
                    self._push(_Attempt(delivery, 1, delivery.at, self._generation))
            if keep:
                history[change.job_id].append(change)
        now = provider.clock.now()
        while self._queue and self._queue[0][0] <= now:
            _, _, item = heapq.heappop(self._queue)
            task = asyncio.get_running_loop().create_task(self._send(item))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        wait = self._cap()
        if self._queue:
            wait = min(wait, self._queue[0][0] - now)
        if next_due is not None:
            wait = min(wait, next_due - now)
        return self._sleep(wait, busy or bool(self._tasks), self._unplanned, now)

    def _sleep(self, wait: float, busy: bool, missed: Callable[[float], bool], now: float) -> float:
        """How long to sleep after a turn: within a tick while ``busy`` (jobs are changing, or
        a send in flight may need cutting short by a reset or a load, which make no change),
        unwoken; longer only asleep, when the next state change or a timed step scheduled
        before ``now + wait`` wakes the loop (and at once when ``missed(now + wait)``: one came
        after this turn looked, before it was asleep)."""
        if busy:
            wait = min(wait, self.tick)
        if wait > self.tick:
            self._asleep = True
            engine = self._engine
            if engine is not None:
                engine.wake_at = now + wait
            if missed(now + wait):
                self._awake()
                return 0.0
        return max(wait, 0.0)

    def _awake(self) -> None:
        self._asleep = False
        if self._engine is not None:
            self._engine.wake_at = -math.inf

    def _woken_early(self) -> None:
        """Wake a loop asleep past the next tick, once: the engine scheduled a timed step before
        it wakes, or a change came (a request's thread, under the provider's lock)."""
        if self._asleep:
            self._asleep = False
            self.wake()

    def _unplanned(self, until: float) -> bool:
        engine = self.provider.engine
        if engine is not self._engine or engine.sendable_count > self._cursor:
            return True
        due = engine.next_due(sendable_only=True)
        return due is not None and due < until

    def _reloaded(self, until: float) -> bool:
        provider = self.provider
        return provider.engine is not self._engine or provider.scenario.webhooks is not None

    def _cap(self) -> float:
        """The longest the loop may sleep: ``tick`` on a clock that can jump."""
        clock = self.provider.clock
        if isinstance(clock, RealClock) and clock.monotonic is time.monotonic:
            return max(self.tick, self.REAL_TICK)
        return self.tick

    def _restart(self, engine: Engine) -> None:
        """A new engine (load or reset): forget everything planned for the old one."""
        if self._engine is not None:
            self._engine.on_early = None
        self._engine = engine
        engine.on_early = self._woken_early
        self._generation += 1
        # from the first change kept: 0, but for a run served in-process before this started
        self._cursor = engine.changes_let_go
        self._history.clear()
        self._queue.clear()
        self._gone.clear()
        for task in list(self._tasks):
            task.cancel()

    def _push(self, item: _Attempt) -> None:
        heapq.heappush(self._queue, (item.at, next(self._order), item))

    # -- one attempt ----------------------------------------------------------------------

    async def _send(self, item: _Attempt) -> None:
        provider = self.provider
        config = provider.scenario.webhooks
        delivery = item.delivery
        if config is None or item.generation != self._generation or delivery.url in self._gone:
            return
        clock, journal = provider.clock, provider.journal
        now = clock.now()
        base = _entry_base(delivery, item.attempt, now)
        if delivery.variant == "missing":
            journal.append(Entry(seq=journal.next_seq(), completed_at=now, **base))
            return
        allowed = self.allow_webhook_hosts | provider.allow_webhook_hosts
        if not is_allowed_target(delivery.url, allowed):
            log.warning(
                "not sending %s to %s: only loopback hosts are allowed unless you pass"
                " --allow-webhook-host",
                delivery.event,
                redact_url(delivery.url),
            )
            journal.append(
                Entry(
                    seq=journal.next_seq(), completed_at=now, error_code="host_not_allowed", **base
                )
            )
            return
        send = Outgoing(delivery, config.secret, clock.epoch + now, clock.epoch, provider.base_url)
        message = provider.dialect.webhook_message(send)
        body = message.body
        headers = {"user-agent": "fakeprovider-webhooks", **message.headers}
        seq = journal.next_seq()
        journal.append(Entry(seq=seq, **base))
        started: float | None = None
        status: int | None = None
        error: str | None = None
        retry_after: RetryAfterRecord | None = None
        import httpx

        try:
            async with self._http().stream(
                "POST", delivery.url, content=body, headers=headers, timeout=config.timeout
            ) as response:
                started = clock.now()
                status = response.status_code
                retry_after = _retry_after(response.headers, started, clock.epoch)
                await _drain(response)
        except httpx.TimeoutException:
            error = "timeout"
        except httpx.HTTPError:
            error = "connection_error"
        except asyncio.CancelledError:
            # A reset, scenario load or stop cut the send short. It was made, so it is written
            # out, still in flight (no completion time): the receiver never got to answer, and
            # the checker judges no send in flight.
            journal.complete(seq, response_started_at=started, status_code=status)
            raise
        completed = clock.now()
        # journaled even after a reset or scenario load: it belongs to the run it started in
        journal.complete(
            seq,
            response_started_at=started,
            completed_at=completed,
            status_code=status,
            error_code=error,
            retry_after=retry_after,
        )
        if item.generation == self._generation:
            self._after(config, item, status, retry_after, completed)

    def _after(
        self,
        config: Webhooks,
        item: _Attempt,
        status: int | None,
        retry_after: RetryAfterRecord | None,
        completed: float,
    ) -> None:
        delivery = item.delivery
        if status == 410:
            self._gone.add(delivery.url)
            return
        retryable = status is None or status == 429 or status >= 500
        if not retryable or item.attempt >= config.max_attempts:
            return
        wait = backoff(
            config,
            item.attempt,
            seed=self.provider.scenario.seed,
            msg_id=delivery.webhook_id,
            variant=delivery.variant,
        )
        at = completed + wait
        if retry_after is not None and retry_after.not_before is not None:
            at = max(at, retry_after.not_before)
        self._push(_Attempt(delivery, item.attempt + 1, at, item.generation))
        self.wake()


#: Query parameter names (or parts of names) that carry a credential in a callback URL.
_SECRET_PARAMS = ("token", "key", "sig", "secret", "pass", "pwd", "auth", "credential", "session")
_SECRET_EXACT = frozenset({"code", "jwt", "hmac", "hash", "expires_signature"})
REDACTED = "REDACTED"


def _secret_param(name: str) -> bool:
    lowered = name.lower()
    return lowered in _SECRET_EXACT or any(word in lowered for word in _SECRET_PARAMS)


def redact_url(url: str) -> str:
    """``url`` without its credentials, for the journal and the log: a userinfo
    (``user:password@``) and the values of query parameters such as ``token=``, ``key=``,
    ``sig=``, ``X-Amz-Signature=`` become ``REDACTED``. Anything else is kept as written."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = []
        for pair in query.split("&"):
            name, eq, value = pair.partition("=")
            secret = eq and value and _secret_param(unquote_plus(name))
            pairs.append(f"{name}={REDACTED}" if secret else pair)
        query = "&".join(pairs)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _entry_base(delivery: Delivery, attempt: int, now: float) -> dict[str, Any]:
    parts = urlsplit(redact_url(delivery.url))
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return {
        "kind": "webhook",
        "job_id": delivery.job_id,
        "method": "POST",
        "path": path,
        "client": parts.netloc,
        "received_at": now,
        "job_status": delivery.job.status,
        "event": delivery.event,
        "webhook_id": delivery.webhook_id,
        "attempt": 0 if delivery.variant == "missing" else attempt,
        "delivery": delivery.variant,
    }


async def _drain(response: httpx.Response) -> None:
    read = 0
    async for chunk in response.aiter_raw():
        read += len(chunk)
        if read >= _MAX_ANSWER:
            break


def _retry_after(headers: httpx.Headers, now: float, epoch: float) -> RetryAfterRecord | None:
    """The receiver's ``Retry-After`` as a clock reading (delay-seconds or an HTTP-date)."""
    value = headers.get("retry-after")
    if value is None:
        return None
    return RetryAfterRecord(*parse_retry_after(value, sent_at=now, epoch=epoch))
