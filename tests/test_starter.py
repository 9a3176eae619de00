"""``fakeprovider new``'s templates: the commented starter and renamed copies, valid as written."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fakeprovider._starter import NAME_PATTERN, copy_of, starter
from fakeprovider.errors import ScenarioError
from fakeprovider.explain import explain
from fakeprovider.scenario import bundled_scenarios, parse_scenario


def uncommented(text: str) -> str:
    """``text`` with every block after a '# Uncomment ...' line uncommented (up to a blank line)."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("# Uncomment"):
            inside = True
            continue
        if not line.strip():
            inside = False
        lines.append(line.removeprefix("# ") if inside else line)
    return "\n".join(lines) + "\n"


def test_the_starter_validates_as_written_and_is_named() -> None:
    scenario = parse_scenario(starter("my-render"))
    assert scenario.name == "my-render"
    assert [s.status for s in scenario.jobs[0].timeline] == [
        "queued",
        "processing",
        None,
        "succeeded",
    ]
    assert [f.name for f in scenario.faults] == ["upstream-503"]
    assert (scenario.rate_limit, scenario.webhooks) == (None, None)
    assert explain(scenario).startswith("my-render: One job that takes a minute")


def test_the_starters_optional_blocks_validate_once_uncommented() -> None:
    text = starter("my-render")
    assert text.count("# Uncomment") == 2
    scenario = parse_scenario(uncommented(text))
    assert scenario.rate_limit is not None
    assert scenario.rate_limit.routes == ("status",)
    assert scenario.webhooks is not None
    assert scenario.webhooks.events == ("job.succeeded", "job.failed")


@pytest.mark.parametrize("name", ["123", "true", "null", "1e3", "0x10", "on"])
def test_a_name_yaml_would_read_as_another_type_is_quoted(name: str) -> None:
    assert parse_scenario(starter(name)).name == name
    assert parse_scenario(copy_of("quick-preview", name)).name == name


@pytest.mark.parametrize("source", sorted(bundled_scenarios()))
def test_a_copy_of_each_bundled_scenario_is_renamed_and_keeps_its_comments(source: str) -> None:
    original = bundled_scenarios()[source].read_text(encoding="utf-8")
    text = copy_of(source, "mine")
    assert parse_scenario(text) == dataclasses.replace(parse_scenario(original), name="mine")
    comments = [line for line in original.splitlines() if line.lstrip().startswith("#")]
    assert [line for line in text.splitlines() if line.lstrip().startswith("#")] == comments


def test_a_copy_of_a_file_without_a_name_gets_one_after_its_comments(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text("# my notes\n\njobs:\n  - timeline: [{status: succeeded}]\n")
    assert copy_of(str(path), "named") == (
        "# my notes\n\nname: named\njobs:\n  - timeline: [{status: succeeded}]\n"
    )


def test_a_copy_of_an_invalid_file_is_refused_with_its_problems(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("jobs:\n  - timeline: [{status: procesing}]\n")
    with pytest.raises(ScenarioError) as caught:
        copy_of(str(path), "mine")
    assert str(caught.value) == (
        f"{path}:2:25: jobs[0].timeline[0].status: expected one of 'queued', 'processing',"
        " 'succeeded', 'failed', 'cancelled', 'completed_with_errors', got 'procesing' (did you"
        " mean 'processing'?)"
    )


@pytest.mark.parametrize(
    ("name", "accepted"),
    [
        ("my-render", True),
        ("flaky_5xx.v2", True),
        ("A1", True),
        ("a b", False),
        ("../x", False),
        ("-x", False),
        (".hidden", False),
        ("", False),
        ("dir/x", False),
    ],
)
def test_new_names_are_file_names_without_a_folder(name: str, accepted: bool) -> None:
    assert bool(NAME_PATTERN.match(name)) is accepted
