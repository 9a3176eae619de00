"""tests/conftest.py: a run that leaves a file in the repository fails, naming it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture
def repo(pytester: pytest.Pytester) -> pytest.Pytester:
    """A git work tree laid out as ours: tests/conftest.py is this suite's."""
    (pytester.path / "tests").mkdir()
    shutil.copy(HERE / "conftest.py", pytester.path / "tests" / "conftest.py")
    subprocess.run(["git", "init", "-q", str(pytester.path)], check=True)
    return pytester


def test_a_run_that_writes_into_the_working_directory_fails_naming_the_files(
    repo: pytest.Pytester,
) -> None:
    (repo.path / "old.txt").write_text("untracked before the run: not this run's doing\n")
    (repo.path / "tests" / "test_stray.py").write_text(
        "from pathlib import Path\n\n"
        "def test_writes_where_it_stands():\n"
        "    Path('bad.jsonl').write_text('{}')\n"
        "    Path('regressions').mkdir()\n"
        "    Path('regressions', 'found.yaml').write_text('jobs: []')\n"
    )
    result = repo.runpytest_subprocess("-p", "no:cacheprovider", "tests")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1)
    assert (
        "the test run left 2 new file(s) in the repository: bad.jsonl, regressions/; a test must"
        " write under tmp_path, not the working directory"
    ) in result.outlines


def test_a_run_that_writes_under_tmp_path_passes(repo: pytest.Pytester) -> None:
    (repo.path / "tests" / "test_tidy.py").write_text(
        "def test_writes_under_tmp_path(tmp_path):\n    (tmp_path / 'bad.jsonl').write_text('{}')\n"
    )
    result = repo.runpytest_subprocess("-p", "no:cacheprovider", "tests")
    assert result.ret == pytest.ExitCode.OK
    assert not any("left" in line for line in result.outlines)
