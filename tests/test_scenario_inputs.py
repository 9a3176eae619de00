"""Hostile scenario files: every one gets ``file:line:col: path: message``, never a traceback.

The loader is shared by ``validate``, ``serve``, ``explain``, ``load_scenario`` and the admin
PUT. Exact messages for each kind of trouble found by fuzzing (issue 14), then a mutation fuzz
over the bundled scenarios (bounded: 1,200 files or 6 seconds) that keeps it so.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

from fakeprovider.cli import main
from fakeprovider.errors import ScenarioError
from fakeprovider.explain import explain
from fakeprovider.scenario import bundled_scenarios, parse_scenario

JOB = "jobs:\n  - timeline:\n      - {at: 0s, status: queued}\n      - {at: 70s, status: %s}\n"


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, filename="s.yaml")
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "jobs: " + "[" * 2000 + "]" * 2000 + "\n",
            re.compile(
                r"s\.yaml:1:\d+: invalid YAML: nested too deeply; values may nest at most 64 levels"
            ),
        ),
        (
            "jobs:\n  - timeline: [{status: queued}]\n    match: {a: "
            + "[" * 70
            + "]" * 70
            + "}\n",
            "s.yaml:3:77: values nest more than 64 levels deep; flatten them",
        ),
        (
            "a: &a [*a]\njobs: []\n",
            "s.yaml:1:4: invalid YAML: a recursive alias (this value contains itself); an alias"
            " must not refer to a value it is inside",
        ),
        (
            "name: x\x00\njobs: []\n",
            "s.yaml:1:8: invalid YAML: the character U+0000 is not allowed in YAML (a control"
            ' character); remove it, or write it as an escape such as "\\x00" in a double-quoted'
            " string",
        ),
        (
            "name: 2001-13-45\njobs: []\n",
            "s.yaml:1:7: '2001-13-45' cannot be read as a date (month must be in 1..12); quote it"
            " to make it a string",
        ),
        (
            "seed: " + "9" * 5000 + "\n",
            "s.yaml:1:7: '9999999999999999999999999999999999999...' cannot be read as an integer;"
            " quote it to make it a string",
        ),
        (
            "name: !!float abc\n",
            "s.yaml:1:7: 'abc' cannot be read as a number (could not convert string to float:"
            " 'abc'); fix the value or remove the tag",
        ),
        (
            "name: !!bool maybe\n",
            "s.yaml:1:7: 'maybe' cannot be read as true or false; fix the value or remove the tag",
        ),
        (
            "? [a, b]\n: 1\n",
            "s.yaml:1:3: a key must be a plain value such as a name, not a list or mapping",
        ),
    ],
    ids=[
        "deep",
        "deep-value",
        "recursive-alias",
        "nul",
        "date",
        "long-int",
        "float",
        "bool",
        "key",
    ],
)
def test_a_file_pyyaml_cannot_build_is_one_located_problem(
    text: str, expected: str | re.Pattern[str]
) -> None:
    found = problems(text)
    assert len(found) == 1
    if isinstance(expected, str):
        assert found[0] == expected
    else:
        assert expected.fullmatch(found[0]), found[0]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (".inf", "a duration must be at most 7 days (168h, 604800s), got inf"),
        (
            "9" * 400 + "s",
            "a duration must be at most 7 days (168h, 604800s), got 99999999999999999999... (401 characters)",
        ),
        (
            "9" * 400,
            "a duration must be at most 7 days (168h, 604800s), got 99999999999999999999... (400 characters)",
        ),
        ("169h", "a duration must be at most 7 days (168h, 604800s), got '169h'"),
    ],
)
def test_durations_are_finite_and_at_most_7_days(value: str, message: str) -> None:
    text = f"jobs:\n  - timeline:\n      - {{at: {value}, status: succeeded}}\n"
    assert problems(text) == [f"s.yaml:3:14: jobs[0].timeline[0].at: {message}"]


def test_numbers_sizes_deadlines_and_refills_are_bounded() -> None:
    text = (
        "jobs:\n"
        "  - timeline: [{status: succeeded}]\n"
        "    result: {size_bytes: 500000000}\n"
        "seed: 100000000000000000000\n"
        "rate_limit: {capacity: 1, refill_every: 0s}\n"
        "expect: {deadline: 0s, status_rate: 0, ack_limit: .inf}\n"
    )
    assert problems(text) == [
        "s.yaml:3:26: jobs[0].result.size_bytes: expected an integer between 1 and 100000000,"
        " got 500000000",
        "s.yaml:4:7: seed: a number here must be at most 10^15 in size, got 100000000000000000000",
        "s.yaml:5:41: rate_limit.refill_every: a token must take longer than 0s to come back",
        "s.yaml:6:51: expect.ack_limit: a duration must be at most 7 days (168h, 604800s), got inf",
    ]
    text = "jobs: [{timeline: [{status: succeeded}]}]\nexpect: {deadline: 0s, status_rate: 0}\n"
    assert problems(text) == [
        "s.yaml:2:20: expect.deadline: a deadline must be longer than 0s",
        "s.yaml:2:37: expect.status_rate: expected a number greater than 0, got 0.0",
    ]


def test_an_expected_outcome_the_timeline_contradicts_is_refused() -> None:
    assert problems(JOB % "failed" + "expect: {outcome: succeeded}\n") == [
        "s.yaml:5:19: expect.outcome: the first job's timeline ends 'failed' at 70s, so a correct"
        " client reports 'failed', not 'succeeded'; change expect.outcome or the timeline"
    ]
    assert problems(JOB % "succeeded" + "expect: {outcome: succeeded, deadline: 1m}\n") == [
        "s.yaml:5:19: expect.outcome: the first job's timeline ends at 70s, after the deadline of"
        " 1m, so a correct client reports 'timed_out', not 'succeeded'; change expect.outcome or"
        " the timeline"
    ]
    # what the timeline decides passes; a client's own cancel or failure is not second-guessed
    for outcome, status in (("succeeded", "succeeded"), ("cancelled", "succeeded")):
        parse_scenario(JOB % status + f"expect: {{outcome: {outcome}}}\n")
    parse_scenario(JOB % "succeeded" + "expect: {outcome: timed_out, deadline: 1m}\n")
    parse_scenario(JOB % "succeeded" + "expect: {outcome: failed}\n")


@pytest.mark.parametrize("scale", ["inf", "1e308", "0", "-1", "nan", "x"])
def test_a_time_scale_beyond_1000_or_not_positive_is_bad_usage(
    scale: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["explain", "slow-success", "--time-scale", scale])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(
        "error: argument --time-scale: expected a time scale greater than 0 and at most 1000,"
        f" got {scale!r}\n"
    )


def test_validate_reports_a_broken_file_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(b"name: !!bool maybe\n")
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().out == (
        f"{path}:1:7: 'maybe' cannot be read as true or false; fix the value or remove the tag\n"
    )


# -- fuzz -------------------------------------------------------------------------------------

_SNIPPETS = [
    "!!bool maybe",
    "2001-13-45",
    "!!float abc",
    "!!int 0x",
    "!!binary '#'",
    "!!timestamp x",
    ".inf",
    "-.inf",
    ".nan",
    "9" * 400,
    "9" * 5000,
    "1e400",
    "-1",
    "0",
    "0s",
    "999999h",
    "&x [*x]",
    "*undefined",
    "[" * 120 + "]" * 120,
    "{" * 40 + "}" * 40,
    "'unclosed",
    "\x00",
    "\x07",
    "\t",
    "null",
    "[]",
    "{}",
    "~",
    "yes",
    "!!python/object:os.system x",
    "<<: {a: 1}",
    "é",
]


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        index = rng.randrange(len(lines))
        line = lines[index]
        choice = rng.random()
        if choice < 0.5 and ":" in line:  # replace a value
            key = line[: line.index(":") + 1]
            lines[index] = f"{key} {rng.choice(_SNIPPETS)}"
        elif choice < 0.7:  # insert a snippet anywhere in the line
            at = rng.randrange(len(line) + 1)
            lines[index] = line[:at] + rng.choice(_SNIPPETS) + line[at:]
        elif choice < 0.85:  # duplicate or drop a line
            if rng.random() < 0.5:
                lines.insert(index, line)
            else:
                del lines[index]
                if not lines:
                    lines = ["jobs: []"]
        else:  # a numeric value made huge, negative or odd
            lines[index] = re.sub(
                r"\d+", lambda _: rng.choice(["0", "-5", "9" * 30, "1e309", "00"]), line, count=1
            )
    return "\n".join(lines) + "\n"


def test_mutated_scenarios_load_or_get_located_problems_never_a_crash() -> None:
    rng = random.Random(14)
    corpus = [path.read_text(encoding="utf-8") for path in bundled_scenarios().values()]
    located = re.compile(r"^fuzz\.yaml:\d+:\d+: \S")
    stop = time.monotonic() + 6.0
    refused = loaded = 0
    for number in range(1200):
        if time.monotonic() > stop:
            break
        text = _mutate(rng, rng.choice(corpus))
        try:
            scenario = parse_scenario(text, filename="fuzz.yaml")
        except ScenarioError as exc:
            for problem in exc.problems:
                assert located.match(str(problem)), (number, str(problem), text)
                assert "\n" not in str(problem)
            refused += 1
            continue
        except Exception as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"mutant #{number} crashed the loader: {exc!r}\n{text}")
        # what loads must also explain, scale and serialise without crashing
        explain(scenario)
        scenario.scaled(1000.0)
        scenario.to_yaml()
        loaded += 1
    assert refused >= 20  # both sides were exercised, even on a loaded machine
    assert loaded >= 5
