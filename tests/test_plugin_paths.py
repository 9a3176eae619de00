"""Scenario paths in the marker, ``load()`` and ``example()``: next to the test file first, then
the rootdir, then bundled names, wherever pytest runs from (child runs with pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeprovider_pytest import locate_scenario

from fakeprovider.errors import ScenarioError
from fakeprovider.scenario import bundled_scenarios


def _scenario(name: str, done_at: str = "5s") -> str:
    return f"name: {name}\njobs:\n  - timeline: [{{status: queued}}, {{at: {done_at}, status: succeeded}}]\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with a test folder two levels down and scenarios beside the test and at the root."""
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\nfilterwarnings = error\n")
    folder = pytester.path / "tests" / "api"
    folder.mkdir(parents=True)
    (folder / "beside.yaml").write_text(_scenario("beside"), encoding="utf-8")
    (folder / "both.yaml").write_text(_scenario("both-from-the-test-folder"), encoding="utf-8")
    (pytester.path / "both.yaml").write_text(_scenario("both-from-the-root"), encoding="utf-8")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "root.yaml").write_text(_scenario("root"), encoding="utf-8")
    (folder / "test_paths.py").write_text(
        """
import pytest

@pytest.mark.fakeprovider("beside.yaml")
def test_beside_the_test_file(fakeprovider):
    assert fakeprovider.scenario.name == "beside"

@pytest.mark.fakeprovider("scenarios/root.yaml")
def test_in_the_rootdir(fakeprovider_inprocess):
    assert fakeprovider_inprocess.scenario.name == "root"

@pytest.mark.fakeprovider("both.yaml")
def test_the_test_folder_comes_first(fakeprovider):
    assert fakeprovider.scenario.name == "both-from-the-test-folder"

@pytest.mark.fakeprovider("slow-success")
def test_then_bundled_names(fakeprovider):
    assert fakeprovider.scenario.name == "slow-success"

def test_load_and_example_resolve_the_same_way(fakeprovider, fakeprovider_session):
    fakeprovider.load("beside.yaml")
    assert fakeprovider.scenario.name == "beside"
    with fakeprovider_session.example("scenarios/root.yaml", inprocess=True) as fp:
        assert fp.scenario.name == "root"
        fp.load("both.yaml")
        assert fp.scenario.name == "both-from-the-test-folder"
""",
        encoding="utf-8",
    )
    return pytester


def test_paths_resolve_from_the_project_root(project: pytest.Pytester) -> None:
    project.runpytest().assert_outcomes(passed=5)


def test_paths_resolve_the_same_from_another_working_directory(
    project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "beside.yaml").write_text(_scenario("decoy"), encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    project.runpytest(str(project.path / "tests")).assert_outcomes(passed=5)


def test_paths_resolve_the_same_from_the_test_folder(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.path / "tests" / "api")
    project.runpytest("test_paths.py").assert_outcomes(passed=5)


def test_a_missing_scenario_lists_every_place_looked_in(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_missing="""
import pytest

@pytest.mark.fakeprovider("nowhere.yaml")
def test_missing(fakeprovider_inprocess):
    pass
"""
    )
    result = project.runpytest("test_missing.py")
    result.assert_outcomes(errors=1)
    names = ", ".join(bundled_scenarios())
    root = project.path
    result.stdout.fnmatch_lines(
        [
            "The fakeprovider marker of test_missing.py::test_missing: nowhere.yaml: no such"
            f" scenario file or bundled scenario; looked for {root / 'nowhere.yaml'} (next to"
            " the test file) and a bundled scenario named 'nowhere.yaml' (bundled:"
            f" {names})"
        ]
    )


def test_locate_lists_the_test_folder_and_the_rootdir(tmp_path: Path) -> None:
    here, root = tmp_path / "tests", tmp_path
    here.mkdir()
    with pytest.raises(ScenarioError) as caught:
        locate_scenario("gone.yaml", [(here, "next to the test file"), (root, "in the rootdir")])
    names = ", ".join(bundled_scenarios())
    assert str(caught.value) == (
        f"gone.yaml: no such scenario file or bundled scenario; looked for {here / 'gone.yaml'}"
        f" (next to the test file), {root / 'gone.yaml'} (in the rootdir) and a bundled scenario"
        f" named 'gone.yaml' (bundled: {names})"
    )


def test_a_near_miss_of_a_bundled_name_is_suggested(tmp_path: Path) -> None:
    with pytest.raises(
        ScenarioError, match=r"named 'slow-sucess' \(did you mean 'slow-success'\?\)"
    ):
        locate_scenario("slow-sucess", [(tmp_path, "next to the test file")])


def test_locate_takes_absolute_paths_and_yaml_text_as_they_are(tmp_path: Path) -> None:
    target = tmp_path / "abs.yaml"
    target.write_text(_scenario("abs"), encoding="utf-8")
    assert locate_scenario(str(target), [(tmp_path / "x", "next to the test file")]) == target
    text = _scenario("inline")
    assert locate_scenario(text, []) == text
    with pytest.raises(ScenarioError, match=r"looked for /nonexistent/abs\.yaml and a bundled"):
        locate_scenario("/nonexistent/abs.yaml", [(tmp_path, "next to the test file")])
