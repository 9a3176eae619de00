"""``benchmarks/bench_check_scaling.py``'s 1M mode, run small: each shape's check against the
baseline of the same run (the same file read with ``json.loads``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench_scripts import load_script


def test_the_cli_table_gives_each_shape_beside_the_json_loads_baseline_of_the_same_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = load_script("bench_check_scaling")
    bench.cli_table(["many-jobs", "tight-poller"], 600, stop=float("inf"))
    out = capsys.readouterr().out.splitlines()
    assert out[2].split() == [
        "shape", "MB", "wall", "s", "cpu", "s", "us/entry", "peak", "RSS", "exit",
        "json.loads", "cpu", "s", "x", "json.loads",
    ]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in out[3:5]}
    assert sorted(rows) == ["many-jobs", "tight-poller"]
    for row in rows.values():
        cpu, base, ratio = float(row[3]), float(row[8]), float(row[9])
        assert row[7] in ("0", "1")  # judged (2: refused as bad input)
        assert base > 0
        # (each printed to two places: the ratio of the rounded numbers is off by as much as
        # their rounding moves it)
        assert ratio == pytest.approx(cpu / base, abs=ratio * (0.005 / base + 0.005 / cpu) + 0.005)


def test_the_baseline_reads_every_line_and_refuses_a_line_that_is_not_json(
    tmp_path: Path,
) -> None:
    bench = load_script("bench_check_scaling")
    path = tmp_path / "j.jsonl"
    path.write_text('{"seq": 1}\n{"seq": 2}\n')
    run = [sys.executable, "-c", bench.JSON_LOADS, str(path)]
    assert subprocess.run(run, capture_output=True).returncode == 0
    path.write_text('{"seq": 1}\n{"seq": \n')
    assert b"JSONDecodeError" in subprocess.run(run, capture_output=True).stderr
