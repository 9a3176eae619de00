"""The documentation's examples run: YAML blocks validate, shown outputs are real."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from fakeprovider._docs import BEGIN, END, render_into
from fakeprovider.cli import main
from fakeprovider.errors import ScenarioError
from fakeprovider.scenario import parse_scenario

ROOT = Path(__file__).resolve().parent.parent.parent
YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.DOTALL)
#: A YAML block is a whole scenario unless the line above its fence says otherwise:
#: ``<!-- fragment: ... -->`` (a part of one, such as a ``webhooks:`` key),
#: ``<!-- invalid example -->`` (shown to demonstrate an error message) or
#: ``<!-- not a scenario: ... -->`` (YAML of another tool, such as a CI workflow step).
MARKED_BLOCK = re.compile(
    r"(?:<!-- (fragment|invalid example|not a scenario)[^\n]*-->\n)?```ya?ml\n(.*?)```",
    re.DOTALL,
)
DOCUMENTS = sorted(
    str(path.relative_to(ROOT)) for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
)


def yaml_blocks(name: str) -> list[str]:
    return YAML_BLOCK.findall((ROOT / name).read_text(encoding="utf-8"))


def marked_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line of the fence, marker or '', block) for every YAML block of a Markdown text."""
    return [
        (text.count("\n", 0, m.start(2)), m.group(1) or "", m.group(2))
        for m in MARKED_BLOCK.finditer(text)
    ]


def all_blocks() -> list[tuple[str, int, str, str]]:
    return [
        (name, line, marker, block)
        for name in DOCUMENTS
        for line, marker, block in marked_blocks((ROOT / name).read_text(encoding="utf-8"))
    ]


@pytest.mark.parametrize(
    ("document", "line", "marker", "block"),
    all_blocks(),
    ids=[f"{name}:{line}" for name, line, _, _ in all_blocks()],
)
def test_every_yaml_example_in_the_docs_is_a_valid_scenario_unless_marked(
    document: str, line: int, marker: str, block: str
) -> None:
    if marker in ("fragment", "not a scenario"):
        assert yaml.safe_load(block) is not None, "still YAML"
    elif marker == "invalid example":
        with pytest.raises(ScenarioError):
            parse_scenario(block, filename=f"{document}:{line}")
    else:
        parse_scenario(block, filename=f"{document}:{line}")


def test_the_docs_hold_yaml_examples_of_each_kind() -> None:
    # the test above covers something: whole scenarios, the invalid one and a fragment
    found = {(name, marker) for name, _, marker, _ in all_blocks()}
    assert {
        ("README.md", ""),
        ("README.md", "invalid example"),
        ("docs/scenarios.md", ""),
        ("docs/webhooks.md", "fragment"),
    } <= found


def test_a_block_is_marked_by_the_comment_just_above_its_fence() -> None:
    text = (
        "<!-- fragment: a part -->\n```yaml\nwebhooks: {}\n```\n\n"
        "<!-- invalid example -->\n```yaml\njobs: []\n```\n\n"
        "<!-- fragment -->\n\n```yaml\njobs: [{timeline: [{status: queued}]}]\n```\n"
    )
    assert marked_blocks(text) == [
        (2, "fragment", "webhooks: {}\n"),
        (7, "invalid example", "jobs: []\n"),
        (13, "", "jobs: [{timeline: [{status: queued}]}]\n"),
    ]


def test_the_generated_reference_has_no_indented_code_by_mistake() -> None:
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    reference = text.partition(BEGIN)[2].partition(END)[0]
    assert [line for line in reference.splitlines() if line.startswith("    ")] == []


def test_readme_validate_example_output_is_real(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (broken,) = [b for b in yaml_blocks("README.md") if "status: done" in b]
    monkeypatch.chdir(tmp_path)
    Path("broken.yaml").write_text(broken)
    assert main(["validate", "broken.yaml"]) == 1
    shown = capsys.readouterr().out.strip()
    assert f"$ fakeprovider validate broken.yaml\n{shown}\n" in (ROOT / "README.md").read_text()
    Path("broken.yaml").write_text(broken.replace("done", "succeeded"))
    assert main(["validate", "broken.yaml"]) == 1
    assert capsys.readouterr().out.strip() == (
        "broken.yaml:5:14: jobs[0].timeline[2].at: times must not go backwards: 30s comes after 1m"
    )


def test_scenario_reference_is_up_to_date() -> None:
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert render_into(text) == text, "run: python -m fakeprovider._docs"
