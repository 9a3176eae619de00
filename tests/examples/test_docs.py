"""The documentation's examples run: YAML blocks validate, shown outputs are real."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fakeprovider._docs import render_into
from fakeprovider.cli import main
from fakeprovider.errors import ScenarioError
from fakeprovider.scenario import parse_scenario

ROOT = Path(__file__).resolve().parent.parent.parent
YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.DOTALL)


def yaml_blocks(name: str) -> list[str]:
    return YAML_BLOCK.findall((ROOT / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("document", ["README.md", "docs/scenarios.md"])
def test_every_yaml_example_in_the_docs_is_a_valid_scenario_but_the_broken_one(
    document: str,
) -> None:
    for block in yaml_blocks(document):
        if "status: done" in block:
            with pytest.raises(ScenarioError):
                parse_scenario(block)
        else:
            parse_scenario(block)


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
