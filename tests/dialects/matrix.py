"""The SDK matrix: every official SDK's standard wait helper against every bundled scenario.

What each cell must give is stated in ``test_matrix.py`` (``EXPECTED``), not here.

``run_cell(sdk, scenario)`` serves ``scenario`` (time-scaled by ``SCALE``) in the SDK's dialect,
drives the SDK as a user would (create, the SDK's own wait helper or documented poll loop, one
download of a success), and returns a ``Cell``: what the SDK returned or raised (normalised to
an outcome), what ``expected_outcome`` says, and which invariants the checker reports.

How each SDK is driven:
- every job the scenario scripts is created first (in order, each with its own prompt), then
  each is waited for; after a create raises, the rest are not sent (a careful user stops);
- the client's deadline is the scenario's ``expect.deadline``, passed wherever the SDK takes one
  (runway ``timeout``, fal ``client_timeout``, dashscope ``jobs.wait(timeout=)``, the poll loops
  of google-genai, lumaai and volcengine-ark, which have no waiter); openai ``poll`` and
  replicate ``wait`` take none and wait for the end;
- dashscope's ``jobs.wait`` backs off 1 s doubling to 8 s: it is given those at the time scale
  (``poll_interval``, ``max_interval``), as the other SDKs' intervals are set to ``INTERVAL``;
  dashscope-1x's ``VideoSynthesis.wait`` sleeps 1 s..5 s, run at the time scale too (its loop's
  ``time`` module is swapped for the cell); its HTTP errors come back as answers, raised here
  as ``ErrorResponse``;
- the token is ``sk-test-fakeprovider`` (the one ``auth-revoked`` accepts);
- in webhook scenarios a receiver on 127.0.0.1 verifies each delivery with the SDK's own
  verifier where the provider has webhooks and the SDK can ask for them: openai (the endpoint is
  account configuration, so the scenario's ``webhooks.url``; ``webhooks.unwrap``), replicate
  (``webhook=``; ``Webhooks.validate`` with a 300 s tolerance), lumaai (``callback_url=``;
  unsigned, parsed as a ``Generation``), volcengine-ark (``callback_url=``; unsigned, parsed as a
  ``ContentGenerationTask``). runway, google-veo and dashscope have none; fal-client's
  ``subscribe`` takes no webhook URL. The SDK still waits by polling.

``render_table`` renders ``EXPECTED`` as the table in ``docs/dialects/README.md``;
``parse_table`` reads it back.

Adding an SDK: its dialect in ``SDKS`` (the column order), a driver (``driver()``), its judge in
``JUDGES`` when it can verify webhooks; in ``test_matrix.py`` its import name in ``_MODULES`` and
its 16 cells in ``EXPECTED``, stated from the SDK's source (run ``python -m tests.dialects.matrix
SDK`` to see what it does, and explain every finding in the docs); then ``--write`` the table.
"""

from __future__ import annotations

import concurrent.futures
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fakeprovider.invariants import expected_outcome
from fakeprovider.provider import FakeProvider
from fakeprovider.scenario import Scenario, load_scenario
from fakeprovider.server import ServerThread

from .helpers import (
    CLIENT_HEADERS,
    SCALE,
    HookReceiver,
    Judge,
    hook_receiver,
    openai_judge,
    replicate_judge,
    standard_webhooks_judge,
    violations,
)

#: The SDKs, by the short name the table uses, with their dialect.
SDKS: dict[str, str] = {
    "openai": "openai-videos",
    "runwayml": "runway",
    "replicate": "replicate",
    "fal-client": "fal",
    "google-genai": "google-veo",
    "genai-interactions": "gemini",
    "lumaai": "luma",
    "volcengine-ark": "ark",
    "dashscope": "dashscope",
    "dashscope-1x": "dashscope",
}
SCENARIOS = (
    "slow-success",
    "quick-preview",
    "long-render",
    "terminal-failure",
    "cancelled",
    "completed-with-errors",
    "deadline-expiry",
    "transient-5xx",
    "retry-after-seconds",
    "rate-limited",
    "rate-limit-budget",
    "slow-status",
    "ambiguous-submit",
    "auth-revoked",
    "duplicate-webhook",
    "forged-webhook",
    "outage",
)
TOKEN = "sk-test-fakeprovider"
#: How often the poll loops the test writes (google-genai, lumaai) and the SDKs whose interval
#: is a setting (replicate, fal, runway) read the status, in real seconds.
INTERVAL = 0.1
#: A wait with no deadline of its own gives up after this many real seconds; a cell's server
#: is stopped after this long too, so that the SDKs with no deadline (openai ``poll``,
#: replicate ``wait``) fail on a closed connection instead of polling a job that never ends.
WAIT_CAP = 60.0

#: Cells run at another time scale than ``SCALE``, so that their verdict is certain. An SDK
#: that ignores an HTTP-date ``Retry-After`` retries within 0.15 s; ``rate-limited``'s dates
#: (1 s resolution, rounded up, 1 s of slack) say 6-10 s, which at 0.02 is less than the slack
#: (caught in some runs only) and at 0.25 is 1.5-2.5 s (caught in every run). A client that
#: waits is clean at either speed.
#: dashscope-1x's ``VideoSynthesis.wait`` sleeps 1 s, 1 s, 1 s, 2 s... (in scenario time here):
#: on ``rate-limit-budget`` that is more than its budget of 5 reads in 10 s, but at 0.02 the
#: real cost of each request (a few ms, 50 times that in scenario time) spreads the reads on a
#: loaded machine so that some runs stay within it; at 0.1 every run breaks it.
SCALES: dict[tuple[str, str], float] = {
    # volcengine-ark backs a retry off 0.75-1.0 s (then 1.5-2.0 s) and never reads Retry-After;
    # at 0.02 a Retry-After of 3 s or 12 s goes out as "1" (whole seconds, rounded up), so a
    # retry landing just after 1.0 s (a loaded machine) looked like one that waited; at these
    # scales it says "2" and "3", which every retry of the first two comes before.
    ("volcengine-ark", "transient-5xx"): 0.34,
    ("volcengine-ark", "retry-after-seconds"): 0.2,
    ("replicate", "rate-limited"): 0.25,
    ("fal-client", "rate-limited"): 0.25,
    ("dashscope-1x", "rate-limit-budget"): 0.1,
    # the Ark sample loop reads every 0.1 s (real). At 0.02 that is a read every 5 s against a
    # budget of 5 reads in 10 s, and whether the reads of jobs already done, back to back when
    # the wait moves on, make a sixth in some window depended on the machine's load; the 4th
    # create's Retry-After of 15 s went out as "1", which a retry 0.75-1.0 s later sometimes
    # outwaited. At 0.2 the loop reads every 0.5 s (4 times the budget), the Retry-After says
    # "3", and the create's three attempts all come before a slot frees at 6 s.
    ("volcengine-ark", "rate-limit-budget"): 0.2,
}
#: The time scale of the cell being run: the drivers whose SDK sleeps a fixed interval in
#: real seconds (dashscope) sleep it at this scale, so the interval is the same in scenario time.
_cell_scale = SCALE

DOC = Path(__file__).resolve().parents[2] / "docs" / "dialects" / "README.md"
BEGIN = "<!-- matrix:begin (tests/dialects/test_matrix.py writes this table) -->"
END = "<!-- matrix:end -->"


@dataclass(frozen=True)
class Cell:
    sdk: str
    scenario: str
    #: succeeded, failed, cancelled, completed_with_errors, timed_out, or ``raised <Error> <code>``.
    outcome: str
    expected: str
    violations: tuple[str, ...]

    @property
    def text(self) -> str:
        """The table's cell: ``outcome[ ≠]; invariant, ...`` (``-`` when none broke)."""
        mark = "" if self.outcome == self.expected else " ≠"
        shown = sorted(self.violations)
        return f"{self.outcome}{mark}; {', '.join(shown) if shown else '-'}"


class TimedOut(Exception):
    """The client's deadline (or ``WAIT_CAP``) ran out while the job was still running."""


def raised(exc: BaseException) -> str:
    code = next(
        (
            v
            for a in ("status_code", "code", "status")
            if isinstance(v := getattr(exc, a, None), int)
        ),
        None,
    )
    name = type(exc).__name__
    return f"raised {name} {code}" if isinstance(code, int) else f"raised {name}"


def fetch(url: str, attempts: int = 4) -> bytes:
    """Download a result once, as a careful user would: retry 429/5xx after their hint."""
    import httpx

    with httpx.Client(headers=CLIENT_HEADERS) as client:
        for _ in range(attempts):
            response = client.get(url)
            if response.status_code < 500 and response.status_code != 429:
                break
            ms = response.headers.get("retry-after-ms")
            seconds = response.headers.get("retry-after", "1")
            time.sleep(float(ms) / 1000 if ms else float(seconds) if seconds.isdigit() else 1.0)
        response.raise_for_status()
        return response.content


# -- one driver per SDK: create(client) -> handle; wait(client, handle, deadline) -> outcome ---


@dataclass
class Driver:
    client: Callable[[str], Any]
    create: Callable[[Any, str], Any]
    wait: Callable[[Any, Any, float | None], str]
    close: Callable[[Any], None]


def _openai(callback: str | None) -> Driver:
    import openai

    def client(url: str) -> Any:
        return openai.OpenAI(api_key=TOKEN, base_url=f"{url}/v1", default_headers=CLIENT_HEADERS)

    def create(c: Any, prompt: str) -> Any:
        return c.videos.create(prompt=prompt, model="sora-2", seconds="4", size="1280x720")

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        video = c.videos.poll(made.id)  # create_and_poll = create + poll; poll takes no deadline
        if video.status == "completed":
            c.videos.download_content(video.id).read()
            return "succeeded"
        return str(video.status)

    def close(c: Any) -> None:
        c.close()

    return Driver(client, create, wait, close)


def _runway(callback: str | None) -> Driver:
    import runwayml
    import runwayml.lib.polling as polling

    saved = (polling.POLL_TIME, polling.POLL_JITTER)
    polling.POLL_TIME, polling.POLL_JITTER = INTERVAL, 0  # 6 s +/- 1.5 s, read per call

    def client(url: str) -> Any:
        return runwayml.RunwayML(api_key=TOKEN, base_url=url, default_headers=CLIENT_HEADERS)

    def create(c: Any, prompt: str) -> Any:
        return c.text_to_video.create(
            model="gen4.5", prompt_text=prompt, ratio="1280:720", duration=5
        )

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        try:
            done = made.wait_for_task_output(timeout=deadline or WAIT_CAP)
        except runwayml.TaskFailedError as exc:
            return str(exc.task_details.status).lower()
        except runwayml.TaskTimeoutError:
            return "timed_out"
        fetch(done.output[0])
        return "succeeded"

    def close(c: Any) -> None:
        polling.POLL_TIME, polling.POLL_JITTER = saved
        c.close()

    return Driver(client, create, wait, close)


def _replicate(callback: str | None) -> Driver:
    import replicate

    def client(url: str) -> Any:
        made = replicate.Client(api_token=TOKEN, base_url=url, headers=dict(CLIENT_HEADERS))
        made.poll_interval = INTERVAL
        return made

    def create(c: Any, prompt: str) -> Any:
        hook = {"webhook": callback} if callback else {}
        return c.models.predictions.create(model="google/veo-3", input={"prompt": prompt}, **hook)

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        made.wait()  # no deadline parameter
        if made.status == "succeeded":
            fetch(made.output)
        return "cancelled" if made.status == "canceled" else str(made.status)

    def close(c: Any) -> None:
        c._client.close()

    return Driver(client, create, wait, close)


def _fal(url: str) -> Driver:
    import fal_client
    import fal_client.client as fal_module

    saved = fal_module.QUEUE_URL_FORMAT

    def client(base: str) -> Any:
        made = fal_client.SyncClient(key=TOKEN)
        made._client.headers.update(CLIENT_HEADERS)
        return made

    def create(c: Any, prompt: str) -> Any:
        return prompt  # subscribe() submits and waits in one call

    def wait(c: Any, prompt: Any, deadline: float | None) -> str:
        fal_module.QUEUE_URL_FORMAT = f"{url}/"  # no base-URL option (see test_fal.py)
        # subscribe() waits in a worker thread (on the SDK's shared executor) and leaves it
        # running when its timeout fires, after cancelling the request: the worker polls on
        # until it sees the end. The driver waits for it, so that what it sends is in the
        # journal in every run, not only when it polls before close() shuts its connections.
        executor = fal_module.EXECUTOR
        workers: list[concurrent.futures.Future[Any]] = []
        submit = executor.submit

        def watched(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            future = submit(fn, *args, **kwargs)
            workers.append(future)
            return future

        executor.submit = watched  # type: ignore[method-assign]
        try:
            c.subscribe(
                "fal-ai/veo3",
                arguments={"prompt": prompt},
                with_logs=True,
                interval=INTERVAL,
                client_timeout=deadline or WAIT_CAP,
            )
        except fal_client.FalClientTimeoutError:
            concurrent.futures.wait(workers, timeout=WAIT_CAP)
            return "timed_out"
        finally:
            del executor.submit
        return "succeeded"  # the result (response_url) is the retrieval

    def close(c: Any) -> None:
        fal_module.QUEUE_URL_FORMAT = saved
        c._client.close()

    return Driver(client, create, wait, close)


def _google(callback: str | None) -> Driver:
    from google import genai
    from google.genai import types

    def client(url: str) -> Any:
        return genai.Client(
            vertexai=True,
            api_key=TOKEN,
            http_options=types.HttpOptions(base_url=f"{url}/", headers=CLIENT_HEADERS),
        )

    def create(c: Any, prompt: str) -> Any:
        return c.models.generate_videos(
            model="veo-3.0-generate-001", source=types.GenerateVideosSource(prompt=prompt)
        )

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        # no waiter: poll operations.get as its docstring shows
        end = time.monotonic() + (deadline or WAIT_CAP)
        while not made.done:
            if time.monotonic() > end:
                return "timed_out"
            time.sleep(INTERVAL)
            made = c.operations.get(made)
        if made.error:
            return "cancelled" if made.error.get("code") == 1 else "failed"
        return "succeeded"  # the video comes inline: no download

    def close(c: Any) -> None:
        c.close()

    return Driver(client, create, wait, close)


#: The Interactions API's statuses, as the outcomes the table uses.
_INTERACTION_OUTCOMES = {
    "completed": "succeeded",
    "incomplete": "completed_with_errors",
    "failed": "failed",
    "cancelled": "cancelled",
}


def _interactions(callback: str | None) -> Driver:
    from google import genai
    from google.genai import types

    def client(url: str) -> Any:
        return genai.Client(
            api_key=TOKEN,
            http_options=types.HttpOptions(base_url=f"{url}/", headers=CLIENT_HEADERS),
        )

    def create(c: Any, prompt: str) -> Any:
        hook = {"webhook_config": {"uris": [callback]}} if callback else {}
        return c.interactions.create(
            model="veo-3.1-generate-preview", input=prompt, background=True, **hook
        )

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        # no waiter: poll interactions.get until the status is no longer queued/in_progress
        end = time.monotonic() + (deadline or WAIT_CAP)
        while made.status in ("queued", "in_progress"):
            if time.monotonic() > end:
                return "timed_out"
            time.sleep(INTERVAL)
            made = c.interactions.get(made.id)
        return _INTERACTION_OUTCOMES.get(str(made.status), str(made.status))  # video inline

    def close(c: Any) -> None:
        c.close()

    return Driver(client, create, wait, close)


def _luma(callback: str | None) -> Driver:
    import lumaai

    def client(url: str) -> Any:
        return lumaai.LumaAI(
            auth_token=TOKEN, base_url=f"{url}/dream-machine/v1", default_headers=CLIENT_HEADERS
        )

    def create(c: Any, prompt: str) -> Any:
        hook = {"callback_url": callback} if callback else {}
        return c.generations.create(
            model="ray-2", prompt=prompt, aspect_ratio="16:9", duration="5s", **hook
        )

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        end = time.monotonic() + (deadline or WAIT_CAP)
        while made.state not in ("completed", "failed"):
            if time.monotonic() > end:
                return "timed_out"
            time.sleep(INTERVAL)
            made = c.generations.get(made.id)
        if made.state == "completed":
            fetch(made.assets.video)
            return "succeeded"
        return "failed"

    def close(c: Any) -> None:
        c.close()

    return Driver(client, create, wait, close)


def _ark(callback: str | None) -> Driver:
    import httpx
    import volcenginesdkarkruntime as ark

    def client(url: str) -> Any:
        # no header option: an http_client carries the client id
        http = httpx.Client(headers=CLIENT_HEADERS)
        return ark.Ark(base_url=f"{url}/api/v3", api_key=TOKEN, http_client=http)

    def create(c: Any, prompt: str) -> Any:
        hook = {"callback_url": callback} if callback else {}
        content = [{"type": "text", "text": prompt}]
        return c.content_generation.tasks.create(
            model="doubao-seedance-1-0-pro-250528", content=content, **hook
        )

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        # no waiter: the loop Ark's samples write (tasks.get until the status is terminal)
        end = time.monotonic() + (deadline or WAIT_CAP)
        while True:
            task = c.content_generation.tasks.get(task_id=made.id)
            if task.status in ("succeeded", "failed", "cancelled", "expired"):
                break
            if time.monotonic() > end:
                return "timed_out"
            time.sleep(INTERVAL)
        if task.status == "succeeded":
            fetch(task.content.video_url)
        return "failed" if task.status == "expired" else str(task.status)

    def close(c: Any) -> None:
        c.close()

    return Driver(client, create, wait, close)


def _dashscope(callback: str | None) -> Driver:
    import httpx
    from dashscope.v2 import Client
    from dashscope.v2.errors import DashScopeError

    def client(url: str) -> Any:
        base = f"{url}/api/v1"
        http = httpx.Client(base_url=base, headers=CLIENT_HEADERS)  # used as is: base URL too
        return Client(api_key=TOKEN, base_url=base, http_client=http)

    def create(c: Any, prompt: str) -> Any:
        return c.videos.jobs.create(model="wan2.2-t2v-plus", prompt=prompt)

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        # jobs.wait backs off 1 s doubling to 8 s: at the scenarios' time scale here
        try:
            done = c.videos.jobs.wait(
                made,
                poll_interval=1.0 * _cell_scale,
                max_interval=8.0 * _cell_scale,
                timeout=deadline or WAIT_CAP,
            )
        except DashScopeError as exc:
            # wait raises on FAILED (a 200 answer whose task failed), CANCELED and timeout
            body = exc.body if isinstance(exc.body, dict) else {}
            if exc.status_code == 200 and body.get("output", {}).get("task_status") == "FAILED":
                return "failed"
            if "was canceled while waiting" in str(exc):
                return "cancelled"
            if "timed out after" in str(exc):
                return "timed_out"
            raise
        if done.succeeded:
            fetch(done.video_url)
            return "succeeded"
        return str(done.status).lower()

    def close(c: Any) -> None:
        c.transport.http_client.close()

    return Driver(client, create, wait, close)


class ErrorResponse(Exception):
    """dashscope 1.x returns an HTTP error as its answer (``status_code``) instead of raising:
    the 1.x driver raises this, so the cell reads ``raised ErrorResponse <status>``."""

    def __init__(self, status_code: int, code: str | None) -> None:
        super().__init__(f"{status_code} {code}")
        self.status_code = status_code


_DASHSCOPE_STATUS = {"SUCCEEDED": "succeeded", "FAILED": "failed", "CANCELED": "cancelled"}


def _dashscope_1x(callback: str | None) -> Driver:
    import types

    import dashscope
    from dashscope.client import base_api

    saved = (dashscope.base_http_api_url, base_api.time)
    # VideoSynthesis.wait sleeps 1 s..5 s (locals of its loop): run them at the time scale
    base_api.time = types.SimpleNamespace(
        time=time.time, sleep=lambda s: time.sleep(s * _cell_scale)
    )

    def client(url: str) -> Any:
        dashscope.base_http_api_url = f"{url}/api/v1"  # module settings, no client object
        return None

    def create(c: Any, prompt: str) -> Any:
        made = dashscope.VideoSynthesis.async_call(
            model="wan2.2-t2v-plus", prompt=prompt, api_key=TOKEN, headers=CLIENT_HEADERS
        )
        if made.status_code != 200:
            raise ErrorResponse(made.status_code, made.code)
        return made

    def wait(c: Any, made: Any, deadline: float | None) -> str:
        done = dashscope.VideoSynthesis.wait(
            made, api_key=TOKEN, headers=CLIENT_HEADERS, wait_timeout=deadline or WAIT_CAP
        )
        if done.status_code == 408 and done.code == "WaitTaskTimeout":
            return "timed_out"
        if done.status_code != 200:
            raise ErrorResponse(done.status_code, done.code)
        status = done.output.task_status
        if status == "SUCCEEDED":
            fetch(done.output.video_url)
        return _DASHSCOPE_STATUS.get(status, status.lower())

    def close(c: Any) -> None:
        dashscope.base_http_api_url, base_api.time = saved

    return Driver(client, create, wait, close)


def driver(sdk: str, url: str, callback: str | None = None) -> Driver:
    if sdk == "fal-client":
        return _fal(url)
    return {
        "openai": _openai,
        "runwayml": _runway,
        "replicate": _replicate,
        "google-genai": _google,
        "genai-interactions": _interactions,
        "lumaai": _luma,
        "volcengine-ark": _ark,
        "dashscope": _dashscope,
        "dashscope-1x": _dashscope_1x,
    }[sdk](callback)


@contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # openai videos.* is @deprecated
        yield


def drive(sdk: str, url: str, scenario: Scenario, callback: str | None = None) -> list[str]:
    """Each job's outcome, as the SDK reported it (or what it raised)."""
    run = driver(sdk, url, callback)
    deadline = scenario.expect.deadline
    client = run.client(url)
    outcomes: list[str] = []
    try:
        with _quiet():
            made: list[Any] = []
            for number in range(1, len(scenario.jobs) + 1):
                # one logical request per job: the same body twice would be a resubmission
                prompt = "a cat" if number == 1 else f"a cat, clip {number}"
                try:
                    made.append(run.create(client, prompt))
                except Exception as exc:
                    made.append(exc)
                    break  # a user whose create failed does not send the next one at once
            for handle in made:
                if isinstance(handle, Exception):
                    outcomes.append(raised(handle))
                    continue
                try:
                    outcomes.append(run.wait(client, handle, deadline))
                except Exception as exc:
                    outcomes.append(raised(exc))
    finally:
        run.close(client)
    return outcomes


def _luma_judge(secret: str) -> Judge:
    import json

    import lumaai

    def judge(body: bytes, headers: dict[str, str]) -> str | None:
        lumaai.types.Generation(**json.loads(body))  # unsigned: parse it, as a receiver would
        return None

    return judge


def _ark_judge(secret: str) -> Judge:
    import json

    from volcenginesdkarkruntime.types.content_generation.content_generation_task import (
        ContentGenerationTask,
    )

    def judge(body: bytes, headers: dict[str, str]) -> str | None:
        # unsigned: parse it as the SDK parses a task (construct, no validation)
        task = ContentGenerationTask.construct(**json.loads(body))
        return None if task.id and task.status else "not a task"

    return judge


#: The SDKs that verify (or parse) webhooks, by the receiver's judge.
JUDGES: dict[str, Callable[[str], Judge]] = {
    "openai": openai_judge,
    "replicate": replicate_judge,
    "genai-interactions": standard_webhooks_judge,
    "lumaai": _luma_judge,
    "volcengine-ark": _ark_judge,
}


def run_cell(sdk: str, name: str) -> Cell:
    with ExitStack() as stack:
        scenario = load_scenario(name)
        receiver: HookReceiver | None = None
        callback: str | None = None
        if scenario.webhooks is not None and sdk in JUDGES:
            receiver = stack.enter_context(hook_receiver(JUDGES[sdk](scenario.webhooks.secret)))
            if sdk == "openai":  # the endpoint is account configuration, not a create field
                hooks = replace(scenario.webhooks, url=receiver.url)
                scenario = replace(scenario, webhooks=hooks)
            else:
                callback = receiver.url
        global _cell_scale
        scale = _cell_scale = SCALES.get((sdk, name), SCALE)
        provider = FakeProvider(scenario, dialect=SDKS[sdk], time_scale=scale)
        server = stack.enter_context(ServerThread(provider))
        watchdog = threading.Timer(WAIT_CAP, server.stop)
        watchdog.start()
        try:
            outcomes = drive(sdk, server.url, provider.scenario, callback)
        finally:
            watchdog.cancel()
        if receiver is not None:
            time.sleep(0.5)  # the last sends (duplicates, retries) are due within 0.5 s
            assert server.dispatcher.wait_idle(5.0)
        # google-genai: the video is inline in the status read that shows the job done, and
        # the journal counts that read as the retrieval
        found = tuple(sorted({v.invariant for v in violations(provider)}))
        expected = expected_outcome(provider.scenario)
    distinct = sorted(set(outcomes))
    outcome = (
        distinct[0]
        if len(distinct) == 1
        else " + ".join(f"{outcomes.count(o)}x {o}" for o in distinct)
    )
    return Cell(sdk, name, outcome, expected, found)


# -- the table in docs/dialects/README.md ----------------------------------------------------


def render_table(cells: dict[str, dict[str, str]]) -> str:
    """The table of ``cells`` (sdk -> scenario -> cell text), one row per scenario."""
    head = "| scenario | " + " | ".join(SDKS) + " |"
    rule = "|---" * (len(SDKS) + 1) + "|"
    rows = [head, rule]
    for name in SCENARIOS:
        expected = expected_outcome(load_scenario(name))
        texts = [cells[sdk][name] for sdk in SDKS]
        rows.append(f"| `{name}` ({expected}) | " + " | ".join(texts) + " |")
    return "\n".join(rows)


def parse_table(text: str) -> dict[tuple[str, str], str]:
    """The cells of the table between the markers in ``text``: (sdk, scenario) -> cell text."""
    start, end = text.index(BEGIN), text.index(END)
    lines = [line for line in text[start:end].splitlines() if line.startswith("| `")]
    out: dict[tuple[str, str], str] = {}
    for line in lines:
        parts = [p.strip() for p in line.strip("|").split("|")]
        found = re.match(r"`([\w-]+)`", parts[0])
        assert found is not None, line
        for sdk, cell in zip(SDKS, parts[1:], strict=True):
            out[(sdk, found.group(1))] = cell
    return out


def write_table(cells: dict[str, dict[str, str]]) -> None:
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + render_table(cells) + "\n" + text[end:])


if __name__ == "__main__":  # python -m tests.dialects.matrix [--write] [SDK...]
    import sys

    from .test_matrix import EXPECTED

    if "--write" in sys.argv:  # the docs' table, from the test's expectations
        write_table(EXPECTED)
        sys.exit(0)
    differ = 0
    for sdk in [a for a in sys.argv[1:] if a in SDKS] or list(SDKS):
        for name in SCENARIOS:
            cell = run_cell(sdk, name)
            same = cell.text == EXPECTED[sdk][name]
            differ += not same
            mark = "ok  " if same else f"DIFF (expected {EXPECTED[sdk][name]!r})"
            print(f"{sdk:18} {name:22} {cell.text}  {mark}", flush=True)
    sys.exit(1 if differ else 0)
