"""The pytest plugin, tested in child runs (pytester), as respx and time-machine test theirs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLIENTS = (Path(__file__).parent / "plugin_clients.py").read_text(encoding="utf-8")


@pytest.fixture
def child(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(clients=CLIENTS)
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\nfilterwarnings = error\n")
    return pytester


def test_plugin_module_imports_only_pytest() -> None:
    code = (
        "import sys; import fakeprovider_pytest.plugin; "
        "print(sorted(m for m in ('fakeprovider', 'uvicorn', 'starlette', 'httpx', 'respx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_marker_is_registered_with_help(child: pytest.Pytester) -> None:
    result = child.runpytest("--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.fakeprovider(scenario='slow-success', *, time_scale=1.0, *"]
    )


def test_fakeprovider_fixture_serves_the_marker_scenario_on_a_real_server(
    child: pytest.Pytester,
) -> None:
    child.makepyfile(
        """
        import pytest
        from clients import Careful

        @pytest.mark.fakeprovider("slow-success", time_scale=0.01)
        def test_real(fakeprovider):
            assert fakeprovider.url.startswith("http://127.0.0.1:")
            assert fakeprovider.mode == "server"
            outcome = Careful().run(fakeprovider.url, deadline=3.0)
            assert outcome == fakeprovider.expected_outcome() == "succeeded"
            kinds = [(e.kind, e.status_code) for e in fakeprovider.journal]
            assert kinds[0] == ("submit", 202) and kinds[-1] == ("content", 200)
            assert {k for k, _ in kinds[1:-1]} == {"status"}
            assert fakeprovider.check().ok
            fakeprovider.assert_invariants()

        def test_reset_between_tests(fakeprovider):
            assert len(fakeprovider.journal) == 0
            assert fakeprovider.scenario.name == "slow-success"
            assert fakeprovider.scenario.jobs[0].timeline[-1].at == 93.0
        """
    )
    child.runpytest("-v").assert_outcomes(passed=2)


def test_fakeprovider_serves_a_subprocess_client(child: pytest.Pytester) -> None:
    child.makepyfile(
        """
        import json, subprocess, sys

        CLIENT = '''
        import json, sys, urllib.request
        request = urllib.request.Request(sys.argv[1] + "/v1/jobs", data=b'{"prompt": "x"}',
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request) as answer:
            print(answer.status, json.load(answer)["status"])
        '''

        def test_subprocess(fakeprovider):
            out = subprocess.run([sys.executable, "-c", CLIENT, fakeprovider.url],
                                 capture_output=True, text=True, check=True, timeout=30)
            assert out.stdout.split() == ["202", "queued"]
            assert [(e.kind, e.status_code) for e in fakeprovider.journal] == [("submit", 202)]
        """
    )
    child.runpytest().assert_outcomes(passed=1)


def test_fakeprovider_serves_a_requests_client_through_faults(child: pytest.Pytester) -> None:
    child.makepyfile(
        """
        import time

        import pytest
        import requests

        @pytest.mark.fakeprovider("transient-5xx", time_scale=0.02)
        def test_requests_client(fakeprovider):
            with requests.Session() as http:
                job = http.post(fakeprovider.url + "/v1/jobs", json={"prompt": "x"}).json()
                codes = []
                while True:
                    answer = http.get(f"{fakeprovider.url}/v1/jobs/{job['job_id']}")
                    codes.append(answer.status_code)
                    if answer.status_code == 200 and answer.json()["done"]:
                        break
                    time.sleep(float(answer.headers.get("retry-after", 0))
                               or answer.json().get("poll_after_seconds", 0.1))
            assert codes[:3] == [200, 503, 503]
            assert fakeprovider.journal[0].client == "127.0.0.1"
        """
    )
    child.runpytest().assert_outcomes(passed=1)


def test_marker_overrides_and_load(child: pytest.Pytester) -> None:
    child.makepyfile(
        """
        import pytest

        @pytest.mark.fakeprovider("long-render", time_scale=0.5, seed=7, dialect="generic",
                                  deadline="2m", max_retries=1)
        def test_overrides(fakeprovider):
            scenario = fakeprovider.scenario
            assert (scenario.name, scenario.seed, scenario.dialect) == ("long-render", 7, "generic")
            assert scenario.expect.deadline == 60.0          # 2m in scenario time, scaled by 0.5
            assert scenario.expect.max_retries == 1
            assert scenario.jobs[0].timeline[-1].at == 240.0
            assert fakeprovider.expected_outcome() == "timed_out"
            assert fakeprovider.expected_outcome(deadline="5m") == "succeeded"
            assert fakeprovider.limits(deadline="90s").deadline == 90.0

        def test_load(fakeprovider):
            fakeprovider.load("terminal-failure", time_scale=0.1)
            assert fakeprovider.scenario.name == "terminal-failure"
            assert fakeprovider.expected_outcome() == "failed"

        @pytest.mark.fakeprovider("slow-success", colour="blue")
        def test_unknown_override(fakeprovider):
            pass
        """
    )
    result = child.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "_* ERROR at setup of test_unknown_override _*",
            "The fakeprovider marker of test_marker_overrides_and_load.py::test_unknown_override:"
            " Unknown fakeprovider option 'colour'; use time_scale, seed, dialect or an"
            " expect: key (outcome, deadline, max_retries, retrievals, poll_tolerance, status_rate, ack_limit).",
        ]
    )
    assert "_handle.py" not in result.stdout.str()  # no traceback through the plugin


def test_a_test_that_fails_before_its_fake_exists_shows_no_other_journal(
    child: pytest.Pytester, tmp_path: Path
) -> None:
    child.makepyfile(
        """
        import pytest

        @pytest.mark.fakeprovider("quick-preview", time_scale=0.01)
        def test_first(fakeprovider_inprocess):
            import httpx
            httpx.post(fakeprovider_inprocess.url + "/v1/jobs", json={"prompt": "a cat"})

        @pytest.mark.fakeprovider("quick-preview", dialect="openai")
        def test_second(fakeprovider_inprocess):
            pass
        """
    )
    journals = tmp_path / "journals"
    result = child.runpytest(f"--fakeprovider-journal-dir={journals}")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "The fakeprovider marker of test_a_test_that_fails_before_its_fake_exists_shows_no_other_journal.py"
            "::test_second: unknown dialect 'openai' (did you mean 'openai-videos'?); known"
            " dialects: ark, dashscope, fal, gemini, generic, google-veo,"
            " luma, openai-videos, replicate, runway",
        ]
    )
    assert "fakeprovider journal" not in result.stdout.str()
    assert not journals.exists()


def test_server_errors_are_raised_in_the_test_at_teardown(child: pytest.Pytester) -> None:
    child.makepyfile(
        """
        import httpx
        from fakeprovider.engine import Engine

        def test_engine_bug(fakeprovider, monkeypatch):
            def broken(self, request, now):
                raise RuntimeError("the engine broke")
            monkeypatch.setattr(Engine, "handle", broken)
            answer = httpx.post(fakeprovider.url + "/v1/jobs", json={"prompt": "x"})
            assert answer.status_code == 500

        def test_next_test_is_clean(fakeprovider):
            assert httpx.post(fakeprovider.url + "/v1/jobs", json={"prompt": "x"}).status_code == 202
        """
    )
    result = child.runpytest("-p", "no:logging")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_engine_bug*",
            "E*RuntimeError: the engine broke",
            "E*Raised inside the fakeprovider server thread while handling POST /v1/jobs.",
        ]
    )


def test_inprocess_fixture_runs_a_long_render_in_virtual_time(child: pytest.Pytester) -> None:
    child.makepyfile(
        """
        import asyncio, datetime, time
        import pytest
        from clients import Careful, CarefulAsync

        @pytest.mark.fakeprovider("long-render")
        def test_sync(fakeprovider_inprocess):
            fp = fakeprovider_inprocess
            assert fp.mode == "inprocess" and fp.url == "http://fakeprovider.invalid"
            assert Careful().run(fp.url, deadline=900) == "succeeded"
            assert fp.clock.now() == 480.0
            assert datetime.datetime.now(datetime.timezone.utc).isoformat() == "2026-01-01T00:08:00+00:00"
            fp.assert_invariants()

        @pytest.mark.fakeprovider("rate-limited")
        def test_async(fakeprovider_inprocess):
            assert asyncio.run(CarefulAsync().run(fakeprovider_inprocess.url, 300)) == "succeeded"
            assert [e.status_code for e in fakeprovider_inprocess.journal].count(429) >= 1
            fakeprovider_inprocess.assert_invariants()
        """
    )
    child.runpytest().assert_outcomes(passed=2)


def test_session_example_works_with_hypothesis(child: pytest.Pytester) -> None:
    child.makepyfile(
        """
        from hypothesis import given, settings, strategies as st
        from clients import Careful

        @settings(max_examples=10, deadline=None)
        @given(interval=st.floats(min_value=0.5, max_value=4.0))
        def test_polling_at_any_interval_sees_success(fakeprovider_session, interval):
            with fakeprovider_session.example("quick-preview", inprocess=True) as fp:
                assert Careful().run(fp.url, deadline=120) == fp.expected_outcome()
                assert fp.journal[0].seq == 1        # a fresh fake for every example
                fp.assert_invariants()

        @settings(max_examples=3, deadline=None)
        @given(seed=st.integers(0, 100))
        def test_real_server_examples(fakeprovider_session, seed):
            with fakeprovider_session.example("terminal-failure", time_scale=0.005, seed=seed) as fp:
                assert Careful().run(fp.url, deadline=2.0) == "failed"
                assert fp.scenario.seed == seed
        """
    )
    child.runpytest().assert_outcomes(passed=2)


CONTRACT = """
from fakeprovider_pytest import contract_suite
from clients import Careful, Hasty

test_careful = contract_suite(Careful().run, inprocess=True)
test_careful_on_a_real_server = contract_suite(Careful().run, scenarios=["quick-preview"], time_scale=0.05)
test_hasty = contract_suite(Hasty().run, scenarios=["slow-success"], inprocess=True)
"""


def test_contract_suite_generates_one_test_per_bundled_scenario(child: pytest.Pytester) -> None:
    from fakeprovider import bundled_scenarios

    child.makepyfile(test_contract=CONTRACT)
    result = child.runpytest("-v", "-k", "careful")
    result.assert_outcomes(passed=len(bundled_scenarios()) + 1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*test_careful?ambiguous-submit? PASSED*",
            "*test_careful_on_a_real_server?quick-preview? PASSED*",
        ]
    )


def test_contract_suite_selects_by_scenario_name(child: pytest.Pytester) -> None:
    child.makepyfile(test_contract=CONTRACT)
    from fakeprovider import bundled_scenarios

    result = child.runpytest("-v", "-k", "rate-limited and not hasty")
    result.assert_outcomes(passed=1, deselected=len(bundled_scenarios()) + 1)
    result.stdout.fnmatch_lines(["*test_careful?rate-limited? PASSED*"])


def test_a_failing_client_shows_the_violation_and_the_timeline(child: pytest.Pytester) -> None:
    child.makepyfile(test_contract=CONTRACT)
    from fakeprovider import bundled_scenarios

    result = child.runpytest("-k", "hasty", "-rf")
    result.assert_outcomes(failed=1, deselected=len(bundled_scenarios()) + 1)
    result.stdout.fnmatch_lines(
        [
            "E*fakeprovider.errors.InvariantViolation: * invariant violation(s) in * request(s) from 1 client(s):",
            "E*  by rule: honours_poll_after *",
            "E*  honours_poll_after: status read #2 for job job_* at 1.000 s came 1.000 s after #1 answered,"
            " sooner than its poll hint of 5.000 s (less 10% tolerance)",
            "E*    timeline of job job_* for client 'in-process':",
            "E*    >> #1 * POST /v1/jobs -> 202 'queued' (answered 0.000 s) hint 5 s",
            "E*    >> #2 * GET /v1/jobs/job_* -> 200 'queued' (answered 1.000 s) hint 5 s",
            "*- fakeprovider journal (inprocess, scenario 'slow-success') -*",
            "  #1 * 0.000s  POST /v1/jobs -> 202  queued",
            "FAILED test_contract.py::test_hasty*slow-success* - honours_poll_after x9*",
        ]
    )


def test_failing_tests_journals_are_written_to_the_journal_dir(child: pytest.Pytester) -> None:
    child.makepyfile(
        """
        import httpx, pytest

        @pytest.mark.fakeprovider("slow-success")
        def test_fails(fakeprovider):
            httpx.post(fakeprovider.url + "/v1/jobs", json={"prompt": "x"})
            assert False, "the client gave up"

        def test_passes(fakeprovider):
            httpx.post(fakeprovider.url + "/v1/jobs", json={"prompt": "x"})
        """
    )
    result = child.runpytest("--fakeprovider-journal-dir", "journals")
    result.assert_outcomes(passed=1, failed=1)
    written = sorted(p.name for p in (child.path / "journals").iterdir())
    assert written == [
        "test_failing_tests_journals_are_written_to_the_journal_dir.py_test_fails.jsonl"
    ]
    lines = (child.path / "journals" / written[0]).read_text().splitlines()
    assert [(json.loads(line)["kind"], json.loads(line)["status_code"]) for line in lines] == [
        ("admin", None),  # the run header: `fakeprovider check` takes the scenario's limits from it
        ("submit", 202),
    ]
    assert json.loads(lines[0])["run"]["scenario"] == "slow-success"
    result.stdout.fnmatch_lines(
        [
            "*- fakeprovider journal (server, scenario 'slow-success') -*",
            "  #* POST /v1/jobs -> 202  queued",
        ]
    )


def test_failing_tests_html_reports_are_written_to_the_report_dir(
    child: pytest.Pytester,
) -> None:
    child.makepyfile(
        test_r="""
        import httpx, pytest

        @pytest.mark.fakeprovider("quick-preview")
        def test_hasty(fakeprovider):
            job = httpx.post(fakeprovider.url + "/v1/jobs", json={"prompt": "x"}).json()
            for _ in range(3):
                httpx.get(f"{fakeprovider.url}/v1/jobs/{job['job_id']}")
            fakeprovider.assert_invariants()

        def test_passes(fakeprovider):
            httpx.post(fakeprovider.url + "/v1/jobs", json={"prompt": "x"})
        """
    )
    result = child.runpytest("--fakeprovider-report", "reports", "-rf")
    result.assert_outcomes(passed=1, failed=1)
    written = sorted(p.name for p in (child.path / "reports").iterdir())
    assert written == ["test_r.py_test_hasty.html"]
    page = (child.path / "reports" / written[0]).read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<h1>test_r.py::test_hasty</h1>" in page
    assert "Run 0: quick-preview" in page
    assert page.count('<span class="rule">honours_poll_after</span>') == 3
    result.stdout.fnmatch_lines(
        ["FAILED test_r.py::test_hasty - honours_poll_after x3 (3 invariant violations)"]
    )


def test_xdist_workers_each_get_their_own_server(child: pytest.Pytester) -> None:
    child.makepyfile(
        """
        import os, pytest
        from clients import Careful

        @pytest.mark.parametrize("n", range(4))
        @pytest.mark.fakeprovider("quick-preview", time_scale=0.01)
        def test_worker(fakeprovider, n):
            assert Careful().run(fakeprovider.url, deadline=2.0) == "succeeded"
            fakeprovider.assert_invariants()
            with open(f"url-{os.environ['PYTEST_XDIST_WORKER']}-{n}", "w") as out:
                out.write(fakeprovider.url)
        """
    )
    # pytest-benchmark before 5.3 warns at start-up whenever xdist is active, and the child
    # turns warnings into errors; the warning is about benchmarks, not about this plugin.
    result = child.runpytest_subprocess("-n", "2", "-p", "no:benchmark")
    result.assert_outcomes(passed=4)
    urls = {p.name.split("-")[1]: p.read_text() for p in child.path.glob("url-*")}
    assert sorted(urls) == ["gw0", "gw1"]
    assert urls["gw0"] != urls["gw1"]


def test_the_status_rate_budget_is_judged_at_the_markers_time_scale(child: pytest.Pytester) -> None:
    """expect.status_rate is per scenario second: at time_scale 0.02, 0.5/s becomes 25/s over
    a 0.2 s window. Before, the handle judged the scaled run against the unscaled budget."""
    child.makepyfile(
        """
        import time
        import httpx
        import pytest

        def poll(url, reads, gap):
            with httpx.Client(base_url=url) as client:
                job = client.post("/v1/jobs", json={"prompt": "clip"}).json()["job_id"]
                for _ in range(reads):
                    time.sleep(gap)
                    client.get(f"/v1/jobs/{job}")

        @pytest.mark.fakeprovider("rate-limit-budget", time_scale=0.02)
        def test_polite_at_the_scaled_budget(fakeprovider):
            limits = fakeprovider.limits()
            assert limits.status_rate == pytest.approx(25.0)
            assert limits.status_rate_window == pytest.approx(0.2)
            poll(fakeprovider.url, reads=8, gap=0.11)  # ~9/s, hint 0.1 s
            rules = {v.invariant for v in fakeprovider.check(retrievals=None).violations}
            assert "status_rate" not in rules

        @pytest.mark.fakeprovider("rate-limit-budget", time_scale=0.02)
        def test_too_fast_for_the_scaled_budget(fakeprovider):
            poll(fakeprovider.url, reads=30, gap=0.0)
            rules = {v.invariant for v in fakeprovider.check(retrievals=None).violations}
            assert "status_rate" in rules

        def test_load_sets_the_scale_and_unscaled_is_unchanged(fakeprovider):
            fakeprovider.load("rate-limit-budget", time_scale=0.1)
            assert fakeprovider.limits().status_rate == pytest.approx(5.0)
            fakeprovider.load("rate-limit-budget")
            assert fakeprovider.limits().status_rate == 0.5

        @pytest.mark.fakeprovider("rate-limit-budget", time_scale=0.02)
        def test_inprocess_too(fakeprovider_inprocess):
            assert fakeprovider_inprocess.limits().status_rate == pytest.approx(25.0)
        """
    )
    child.runpytest("-v").assert_outcomes(passed=4)


@pytest.mark.parametrize("inprocess", [False, True])
def test_session_examples_carry_their_time_scale_to_the_limits(inprocess: bool) -> None:
    """What contract_suite uses: ``example(name, time_scale=...)`` judges status_rate scaled."""
    from fakeprovider_pytest import FakeproviderSession

    session = FakeproviderSession()
    try:
        with session.example("rate-limit-budget", inprocess=inprocess, time_scale=0.02) as fp:
            assert fp.time_scale == 0.02
            assert fp.limits().status_rate == pytest.approx(25.0)
        with session.example("rate-limit-budget", inprocess=inprocess) as fp:
            assert fp.limits().status_rate == 0.5
    finally:
        session.close()


@pytest.mark.parametrize("inprocess", [False, True])
def test_the_fake_itself_plays_at_the_examples_time_scale_seed_and_dialect(inprocess: bool) -> None:
    """The provider is told how to play (its run header and dialect say so), not only the handle."""
    from fakeprovider_pytest import FakeproviderSession, prepare_scenario

    play = {"time_scale": 0.02, "seed": 5, "dialect": "replicate"}
    session = FakeproviderSession()
    try:
        with session.example("slow-success", inprocess=inprocess, **play) as fp:
            settings = fp.provider.settings
            assert (settings.time_scale, settings.seed, settings.dialect) == (0.02, 5, "replicate")
            assert fp.provider.dialect.settings is settings
            header = fp.provider.run_header()
            assert (header["time_scale"], header["seed"], header["dialect"]) == (
                0.02,
                5,
                "replicate",
            )
            assert fp.scenario == prepare_scenario("slow-success", **play)
    finally:
        session.close()


def test_a_misspelt_marker_option_gets_a_suggestion() -> None:
    from fakeprovider_pytest._handle import prepare_scenario

    with pytest.raises(TypeError) as caught:
        prepare_scenario("quick-preview", deadlin="1m")
    assert str(caught.value) == (
        "Unknown fakeprovider option 'deadlin' (did you mean 'deadline'?); use time_scale, seed,"
        " dialect or an expect: key (outcome, deadline, max_retries, retrievals, poll_tolerance,"
        " status_rate, ack_limit)."
    )
