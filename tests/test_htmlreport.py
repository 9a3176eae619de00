"""The HTML timeline report: its content, self-containment, and what a real browser draws."""

from __future__ import annotations

import io
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given

from fakeprovider import _check_cli
from fakeprovider.cli import build_parser, main
from fakeprovider.entries import jsonl_line
from fakeprovider.htmlreport import COLOURS, html_report
from fakeprovider.invariants import Limits, check
from fakeprovider.journal import Entry, read_journal
from tests.thorough import thorough

from .test_check_stream import OVERLAPPING, journals
from .test_cli_check import served
from .test_invariants import e, ra

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def story(tmp_path: Path) -> Path:
    """A journal with every element: phases, a 503 and a 429 with Retry-After, poll hints,
    a poll too early and a second download (two violations), a webhook."""
    phase = {"true_status": "queued", "status_since": 0.0}
    running = {"true_status": "processing", "status_since": 3.0}
    done = {"true_status": "succeeded", "status_since": 20.0}
    entries = [
        e(1, "submit", 0.0, code=202, status="queued", poll_after=2.0, **phase),
        e(2, "status", 2.5, code=200, status="queued", poll_after=2.0, **phase),
        e(3, "status", 5.0, code=503, retry_after=ra("3", 8.01), **running),
        e(4, "status", 9.0, status="processing", poll_after=2.0, **running),
        e(5, "status", 9.5, status="processing", poll_after=2.0, **running),
        e(6, "status", 13.0, code=429, retry_after=ra("4", 17.01), **running),
        e(7, "status", 18.0, status="processing", poll_after=2.0, **running),
        e(8, "status", 21.0, status="succeeded", **done),
        e(9, "webhook", 20.2, code=200, client="hooks", event="job.succeeded"),
        e(10, "content", 22.0, **done),
        e(11, "content", 23.0, **done),
    ]
    return served(tmp_path / "story.jsonl", "quick-preview", entries)


def test_the_report_names_every_violation_and_draws_every_request(tmp_path: Path) -> None:
    report = check(read_journal(story(tmp_path)), Limits())
    assert sorted(v.invariant for v in report.violations) == [
        "honours_poll_after",
        "single_retrieval",
    ]
    page = html_report(report)
    for v in report.violations:
        assert v.message.replace("'", "&#x27;") in page
    assert len(re.findall(r'<g class="mark mark-\w+" data-seq="\d+">', page)) == 10
    assert page.count('<g class="webhook">') == 1
    assert page.count('class="halo"') == 4  # the hint and the poll too early; both downloads
    assert page.count('class="retry-after"') == 2
    assert "honours_poll_after &times; 1" in page
    assert "quick-preview (sha256:" in page


def test_the_report_is_self_contained(tmp_path: Path) -> None:
    page = html_report(check(read_journal(story(tmp_path))))
    assert not re.search(r"<(script|link|img|iframe)\b", page)
    assert not re.search(r"\b(src|href)=", page)
    urls = set(re.findall(r"https?://[^\s\"')]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace, never fetched


def test_the_report_command_writes_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(story(tmp_path)), "-o", str(out)]) == 0
    assert capsys.readouterr().err == (
        f"fakeprovider report: wrote {out} (2 invariant violation(s): honours_poll_after x1,"
        " single_retrieval x1)\n"
    )
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["report", str(tmp_path / "none.jsonl"), "-o", str(out)]) == 2


def test_a_big_report_caps_its_lanes_and_its_list(tmp_path: Path) -> None:
    entries = []
    for n in range(1, 251):  # 250 jobs, each shown done at submit and read again
        job = f"j_{n}"
        entries.append(e(2 * n - 1, "submit", float(n), code=202, status="succeeded", job=job))
        entries.append(e(2 * n, "status", n + 0.5, status="succeeded", job=job))
    page = html_report(check(entries))
    assert page.count('class="lane-label"') == 80
    assert "170 more lane(s) not drawn (the first 80 are).</p>" in page
    assert page.count('<span class="rule">') == 200
    assert '<p class="more">50 more violation(s) not listed (the first 200 are;' in page


def test_a_tight_loop_draws_a_mark_a_pixel_not_one_a_request() -> None:
    entries = [e(1, "submit", 0.0, code=202, status="queued")]
    # 3,000 reads a millisecond apart, then one at 100 s: the plot's 940 pixels span 104 s,
    # so the first 3 s are some 27 pixels
    entries += [e(n, "status", (n - 2) / 1000, status="processing") for n in range(2, 3002)]
    entries.append(e(3002, "status", 100.0, status="processing"))
    page = html_report(check(entries, poll_tolerance=1.0))
    marks = re.findall(
        r'<g class="mark mark-status" data-seq="(\d+)"(?: data-count="(\d+)")?>', page
    )
    assert 20 <= len(marks) <= 30
    assert sum(int(count or 1) for _, count in marks) == 3001  # every read in one mark
    assert [int(seq) for seq, _ in marks] == sorted(int(seq) for seq, _ in marks)
    seq, count = marks[0]
    assert seq == "2"
    assert f"<title>{count} requests, #2 to #{1 + int(count)}:\n#2 " in page
    assert len(page) < 200_000  # 1.9 MB with a mark and a badge for each read


def test_requests_drawn_alike_on_one_pixel_leave_the_last_ones_look_on_top() -> None:
    entries = [
        e(1, "submit", 0.0, code=202, status="queued"),
        e(2, "status", 1.0, status="queued"),
        e(3, "status", 1.001, code=429),
        e(4, "status", 1.002, status="queued"),
        e(5, "status", 60.0, status="queued"),
    ]
    page = html_report(check(entries))
    marks = re.findall(
        r'<g class="mark mark-status" data-seq="(\d+)"(?: data-count="(\d+)")?>', page
    )
    # the 429 first, then the two 200s on that pixel (#4 was drawn last, so a 200 shows)
    assert marks == [("3", ""), ("2", "2"), ("5", "")]
    assert "<title>2 requests, #2 to #4:\n#2 " in page


def test_only_the_listed_violations_get_a_numbered_badge() -> None:
    entries = [e(1, "submit", 0.0, code=202, status="queued", poll_after=30.0)]
    # 300 reads a second apart under a 30 s hint: 300 polls too early, 200 listed
    entries += [e(n, "status", n - 1.0, status="queued", poll_after=30.0) for n in range(2, 302)]
    page = html_report(check(entries))
    assert page.count('<span class="rule">honours_poll_after</span>') == 200
    assert page.count('class="badge"') == 200
    assert '<p class="more">100 more violation(s) not listed (the first 200 are;' in page


def _file(path: Path, entries: list[Entry]) -> Path:
    path.write_text("".join(jsonl_line(entry) + "\n" for entry in entries))
    return path


def _read_whole(path: Path, *options: str) -> str:
    """The page drawn from the journal read whole, as ``report -`` (stdin) draws it."""
    args = build_parser().parse_args(["report", str(path), "-o", os.devnull, *options])
    report = _check_cli.judge(str(path), args, prog="fakeprovider report")
    return html_report(report, title=args.title)


@thorough(60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=journals())
def test_a_journal_file_is_drawn_as_it_streams_by_into_the_page_of_the_whole(
    entries: list[Entry],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = _file(Path(folder) / "run.jsonl", entries)
        page = Path(folder) / "report.html"
        if main(["report", str(path), "-o", str(page)]) == 2:  # a journal of no client request
            assert not page.exists()
            return
        assert page.read_text(encoding="utf-8") == _read_whole(path)


def test_a_journal_file_is_not_read_whole_for_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path / "run.jsonl", OVERLAPPING)
    expected = _read_whole(path, "--title", "t")
    monkeypatch.setattr(_check_cli, "judge", lambda *args, **kwargs: pytest.fail("read whole"))
    assert main(["report", str(path), "-o", str(tmp_path / "r.html"), "--title", "t"]) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == expected
    assert capsys.readouterr().err == (
        f"fakeprovider report: wrote {tmp_path / 'r.html'} (1 invariant violation(s):"
        " no_overlap x1)\n"
    )


def test_a_journal_on_standard_input_is_copied_and_drawn_as_it_streams_not_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path / "run.jsonl", OVERLAPPING)
    expected = _read_whole(path, "--title", "t")
    copies = tmp_path / "tmp"
    copies.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(copies))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    monkeypatch.setattr(_check_cli, "judge", lambda *args, **kwargs: pytest.fail("read whole"))
    assert main(["report", "-", "-o", str(tmp_path / "r.html"), "--title", "t"]) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == expected
    assert capsys.readouterr().err == (
        f"fakeprovider report: wrote {tmp_path / 'r.html'} (1 invariant violation(s):"
        " no_overlap x1)\n"
    )
    assert list(copies.iterdir()) == []  # the copy is gone


def test_a_journal_files_page_takes_two_reads_of_it_the_judges_and_the_drawings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path / "run.jsonl", OVERLAPPING)
    expected = _read_whole(path)
    reads: list[str] = []
    read = _check_cli.iter_record_batches

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(str(args[0]))
        return read(*args, **kwargs)

    monkeypatch.setattr(_check_cli, "iter_record_batches", counted)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == expected
    # the runs' lanes noted as the journal is judged: one pass more, for the drawn lanes
    assert reads == [str(path), str(path)]


def test_a_journal_too_far_out_of_order_to_stream_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path / "run.jsonl", OVERLAPPING)
    monkeypatch.setattr(_check_cli, "judge_streamed", lambda *args, **kwargs: None)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == _read_whole(path)


def test_a_journal_replaced_while_the_report_is_drawn_is_refused_not_misdrawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path / "run.jsonl", OVERLAPPING)
    judge = _check_cli.judge_streamed

    def judge_then_replace(*args: Any, **kwargs: Any) -> Any:
        found = judge(*args, **kwargs)
        os.replace(_file(tmp_path / "fresh.jsonl", OVERLAPPING[:2]), path)  # log rotation
        return found

    monkeypatch.setattr(_check_cli, "judge_streamed", judge_then_replace)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()
    assert capsys.readouterr().err == (
        f"fakeprovider report: {path} changed while it was being checked (replaced, truncated"
        " or rewritten); check a copy of it\n"
    )


def test_a_long_journals_page_is_drawn_in_memory_that_does_not_grow_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def peak(reads: int) -> int:
        polls = [
            e(n, "status", n * 1.0, status="processing", poll_after=1.0)
            for n in range(2, reads + 2)
        ]
        path = _file(tmp_path / f"{reads}.jsonl", [e(1, "submit", 0.0, code=202), *polls])
        tracemalloc.start()
        try:
            assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(3_000), peak(15_000)
    # a lane of marks and windows a pixel each, and the reader's window of entries put in seq
    # order: some 5 MB for either (10.6 MB for the longer when it was read whole)
    assert large < 1.5 * small  # (2.2x when every read was kept)
    assert large < 8_000_000
    capsys.readouterr()


def test_a_journal_without_run_header_says_so(tmp_path: Path) -> None:
    page = html_report(check([e(1, "submit", 0.0, code=202, status="queued")]))
    assert "No run header (a journal from an older fakeprovider)." in page
    assert "<h2>Run 0</h2>" in page


# -- in a real browser ---------------------------------------------------------------------


def read_png(path: Path) -> tuple[int, int, list[list[tuple[int, int, int]]]]:
    """Width, height and RGB rows of an 8-bit, non-interlaced RGB or RGBA PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0)
    channels = {2: 3, 6: 4}[colour]
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[list[tuple[int, int, int]]] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[x : x + 3]) for x in range(0, stride, channels)])  # type: ignore[misc]
        previous = line
    return width, height, rows


def rgb(name: str) -> tuple[int, int, int]:
    value = COLOURS[name].lstrip("#")
    return (int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16))


def screenshot(page: Path, out: Path, profile: Path, size: str = "1280,900") -> Path:
    assert CHROMIUM is not None
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--user-data-dir={profile}",
            f"--screenshot={out}",
            f"--window-size={size}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def longest_run(row: list[tuple[int, int, int]], colour: tuple[int, int, int]) -> tuple[int, int]:
    """(start, length) of the longest horizontal run of ``colour`` in ``row``."""
    best, start, length = (0, 0), 0, 0
    for x, pixel in enumerate(row):
        if pixel == colour:
            if length == 0:
                start = x
            length += 1
            if length > best[1]:
                best = (start, length)
        else:
            length = 0
    return best


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_chromium_draws_the_lane_its_phases_marks_and_violations(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert main(["report", str(story(tmp_path)), "-o", str(page)]) == 0
    width, height, rows = read_png(screenshot(page, tmp_path / "shot.png", tmp_path / "profile"))
    assert (width, height) == (1280, 900)
    # the job's lane: the row where the processing band is longest (legend swatches are short)
    runs = [longest_run(row, rgb("processing"))[1] for row in rows]
    band_rows = [y for y, length in enumerate(runs) if length > 100]
    assert band_rows, "the processing phase is drawn as a long band"
    assert band_rows[-1] - band_rows[0] < 30, "in one lane"
    lane_y = (band_rows[0] + band_rows[-1]) // 2  # the band's middle row: the marks' centre
    band = rows[lane_y - 7]  # inside the band, above the marks

    def first(row: list[tuple[int, int, int]], name: str) -> int:
        return row.index(rgb(name))

    assert first(band, "queued") < first(band, "processing") < first(band, "succeeded"), (
        "phases in time order along the axis"
    )
    # marks on the lane's centre line, coloured by answer, in time order
    centre = rows[lane_y]

    def xs(name: str) -> list[int]:
        return [x for x, pixel in enumerate(centre) if pixel == rgb(name)]

    assert xs("server_error"), "the 503 is drawn"
    assert xs("rate_limited"), "the 429 is drawn"
    assert xs("ok"), "the 2xx answers are drawn"
    assert min(xs("ok")) < min(xs("server_error")) < min(xs("rate_limited"))
    # the Retry-After windows (hatched above the band) and numbered violation badges
    above = range(max(0, lane_y - 30), lane_y)
    assert any(rgb("retry_after") in rows[y] for y in above)
    assert sum(row.count(rgb("violation")) for row in rows[lane_y - 30 : lane_y + 10]) > 50
    # the verdict banner's text is red on pink at the top of the page
    top = [pixel for row in rows[80:140] for pixel in row]
    assert (0xFE, 0xE2, 0xE2) in top
