"""The built wheel: what is in it, and that it works outside the repository."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("fakeprovider-*.whl")
    return built


def test_wheel_ships_types_plugin_entry_points_schema_and_scenarios(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    bundled = {p.name for p in (ROOT / "scenarios").glob("*.yaml")}
    assert {
        "fakeprovider/py.typed",
        "fakeprovider_pytest/py.typed",
        "fakeprovider_pytest/plugin.py",
    } <= names
    assert "fakeprovider/scenario.schema.json" in names
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("fakeprovider/_bundled/")} == bundled
    (entry_points,) = [n for n in names if n.endswith("entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[console_scripts]\nfakeprovider = fakeprovider.cli:main" in text
    assert "[pytest11]\nfakeprovider = fakeprovider_pytest.plugin" in text
    assert not any(n.startswith(("tests/", "scenarios/")) for n in names)


def test_installed_wheel_serves_bundled_scenarios_by_name_outside_the_repo(
    wheel: Path, tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # the wheel, not a checkout a PYTHONPATH of the caller's points at (a worktree, say)
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--force-reinstall",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    code = (
        "import fakeprovider, pathlib; "
        "print(pathlib.Path(fakeprovider.__file__).is_relative_to({!r})); "
        "print(sorted(fakeprovider.bundled_scenarios()) == {!r}); "
        "print(fakeprovider.load_scenario('slow-success').name)"
    ).format(str(env_dir), sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml")))
    out = subprocess.run(
        [str(python), "-c", code],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.stdout.split() == ["True", "True", "slow-success"]


def test_the_pytest_extra_brings_exactly_what_client_projects_need(wheel: Path) -> None:
    """fixtures (pytest), in-process mode (httpx), strategies (hypothesis); nothing else."""
    (metadata,) = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("METADATA")]
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    wanted = [
        line.removeprefix("Requires-Dist: ").split(";")[0].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:") and "extra == 'pytest'" in line
    ]
    assert wanted == ["httpx>=0.27", "hypothesis>=6.100", "pytest>=8.0"]
    assert "Provides-Extra: pytest" in text


def test_the_wheel_version_is_the_packages_version(wheel: Path) -> None:
    """The version is written once, in ``fakeprovider/__init__.py``; the wheel's metadata reads it."""
    import fakeprovider

    (metadata,) = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("METADATA")]
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert f"Version: {fakeprovider.__version__}\n" in text
    assert wheel.name.startswith(f"fakeprovider-{fakeprovider.__version__}-")
