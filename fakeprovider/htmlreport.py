"""The HTML report: one self-contained file (inline CSS and SVG, no script, nothing fetched)
that draws each run of a journal as a timeline.

Each job is a lane on a time axis: its status phases are coloured bands, every request is a
mark (its shape says what it was, its colour what it got), the poll hint and ``Retry-After``
windows after an answer are shaded, webhook deliveries are arrows, and the requests of each
violation are ringed and numbered, with the violation's sentence below. The verdict, the count
per rule, the run headers, the metrics and the warnings come first.
"""

from __future__ import annotations

import collections
import html
import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ._runs import _RUN_STARTS
from ._table import entry_line
from .entries import EntryLike
from .invariants import Report, Violation
from .journal import order_entries

__all__ = ["COLOURS", "Layout", "html_report", "write_html_report"]

#: Every colour the report draws with, by what it means (tests look for them in screenshots).
COLOURS: dict[str, str] = {
    "queued": "#cbd5e1",
    "processing": "#fcd34d",
    "succeeded": "#86efac",
    "failed": "#fca5a5",
    "cancelled": "#d6d3d1",
    "completed_with_errors": "#fdba74",
    "other_status": "#e5e7eb",
    "ok": "#15803d",
    "client_error": "#c2410c",
    "rate_limited": "#7c3aed",
    "server_error": "#b91c1c",
    "dropped": "#111827",
    "poll_hint": "#60a5fa",
    "retry_after": "#f472b6",
    "webhook_ok": "#0d9488",
    "webhook_failed": "#dc2626",
    "violation": "#dc2626",
}

LABEL_W = 190  # lane labels, left of the plot
PLOT_W = 940
RIGHT_PAD = 24
AXIS_H = 30
LANE_H = 38
BAND_H = 18
MAX_LANES = 80
MAX_LISTED = 200  # violations listed under each run's timeline
_STATUS_ORDER = (
    "queued",
    "processing",
    "succeeded",
    "completed_with_errors",
    "failed",
    "cancelled",
)
_SHAPES = {"submit": "square", "status": "circle", "content": "diamond", "cancel": "triangle"}


def answer_colour(entry: EntryLike) -> str:
    """The colour of a request's mark: what the client got."""
    code = entry.status_code
    if entry.dropped is not None or code is None:
        return COLOURS["dropped"]
    if code == 429:
        return COLOURS["rate_limited"]
    if code >= 500:
        return COLOURS["server_error"]
    if code >= 400:
        return COLOURS["client_error"]
    return COLOURS["ok"]


def _nice_step(span: float, target: int = 10) -> float:
    raw = span / target
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power  # pragma: no cover - the loop always returns


def _fmt_seconds(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 120:
        minutes, seconds = divmod(round(value), 60)
        return f"{minutes}m{seconds:02d}s" if seconds else f"{minutes}m"
    return f"{value:g} s"


class _Shape:
    """What the first pass over a run finds, without keeping its entries: its header, its span
    on the time axis and its lanes, one per (client, job) in order of first appearance (a
    client's requests about no job in a lane of their own), then one for each job whose
    webhooks have no lane of their job (webhooks go to their job's lane: the last one, when
    several clients asked about it)."""

    def __init__(self, header: dict[str, Any] | None) -> None:
        self.header = header
        self.first = math.inf
        self.end = -math.inf
        #: Each lane's index, by (client, job); webhooks-only lanes by ("(webhooks)", job).
        self.lanes: dict[tuple[str, str | None], int] = {}
        #: The first ``MAX_LANES`` lanes' label and detail.
        self.labels: list[tuple[str, str]] = []
        #: A job's last lane of requests, and the lane each webhook's job draws it in.
        self.by_job: dict[str, int] = {}
        self.hook_lane: dict[str | None, int] = {}

    def add(self, e: EntryLike) -> None:
        at = e.received_at
        self.first = min(self.first, at)
        self.end = max(self.end, e.completed_at if e.completed_at is not None else at)
        if e.kind == "webhook":
            self.hook_lane.setdefault(e.job_id, -1)  # placed by ``finish``, in this order
            return
        key = (e.client, e.job_id)
        if key not in self.lanes:
            index = self.lanes[key] = len(self.lanes)
            if e.job_id is not None:
                self.by_job[e.job_id] = index
            if index < MAX_LANES:
                if e.job_id is None:
                    self.labels.append((e.client, "requests about no job"))
                else:
                    self.labels.append((e.job_id, f"client {e.client}"))

    def finish(self) -> None:
        """Place the webhooks: in their job's lane, else in a lane of their own after the
        others; then the axis: time 0 is the run's start (its header), else its first
        request, and the plot spans the requests (not the server's start-up before them)."""
        for job in self.hook_lane:
            index = self.by_job.get(job) if job is not None else None
            if index is None:
                key = ("(webhooks)", job)
                index = self.lanes.get(key)
                if index is None:
                    index = self.lanes[key] = len(self.lanes)
                    if index < MAX_LANES:
                        self.labels.append((job or "?", "webhooks"))
            self.hook_lane[job] = index
        header, first = self.header, self.first
        self.zero = float(header["clock"]) if header and "clock" in header else first
        self.zero = min(self.zero, first)
        span = max(self.end - first, 1e-3)
        self.t0 = max(self.zero, first - span * 0.02)
        self.t1 = first + span * 1.04

    def x(self, t: float) -> float:
        return LABEL_W + (t - self.t0) / (self.t1 - self.t0) * PLOT_W

    def clamp(self, t: float) -> float:
        return min(max(self.x(t), LABEL_W), LABEL_W + PLOT_W)


class _Splitter:
    """Which run each entry is of, as ``runs_with_headers`` splits them (entries in
    ``order_entries``'s order), one entry at a time."""

    __slots__ = ("begun", "header", "number")

    def __init__(self) -> None:
        self.header: dict[str, Any] | None = None
        self.begun = False
        self.number = -1

    def place(self, e: EntryLike) -> int:
        """The number of ``e``'s run (whose header is then ``header``), or -1 for an admin
        entry (of no run; a run header, reset or scenario load ends the run before it)."""
        if e.kind == "admin":
            if e.run is not None or e.path in _RUN_STARTS:
                if self.begun:
                    self.header, self.begun = e.run, False
                elif e.run is not None:
                    self.header = e.run
            return -1
        if not self.begun:
            self.begun = True
            self.number += 1
        return self.number


class Layout:
    """The first of ``html_report``'s two passes: each run's header, span and lanes, noted as
    the entries go by (``note`` hands each one on), so that it can ride along another pass
    over the same entries (``fakeprovider report`` notes it while it judges the journal)."""

    def __init__(self) -> None:
        self.shapes: list[_Shape] = []
        #: Whether the last ``note`` saw its entries to the end (else the shapes are partial).
        self.complete = False

    def note(self, entries: Iterable[EntryLike]) -> Iterator[EntryLike]:
        """``entries``, each noted on its way through; starts the layout afresh."""
        shapes: list[_Shape] = []
        self.shapes = shapes
        self.complete = False
        splitter = _Splitter()
        for e in entries:
            number = splitter.place(e)
            if number >= 0:
                if number == len(shapes):
                    shapes.append(_Shape(splitter.header))
                shapes[number].add(e)
            yield e
        for shape in shapes:
            shape.finish()
        self.complete = True


def _runs(entries: Iterable[EntryLike]) -> Iterator[tuple[int, EntryLike]]:
    """Each entry of a run with its run's number."""
    splitter = _Splitter()
    for e in entries:
        number = splitter.place(e)
        if number >= 0:
            yield number, e


def _mark(kind: str, cx: float, cy: float, colour: str, dropped: bool) -> str:
    if dropped:
        d = 5
        return (
            f'<path d="M{cx - d:.1f},{cy - d:.1f}L{cx + d:.1f},{cy + d:.1f}M{cx - d:.1f},'
            f'{cy + d:.1f}L{cx + d:.1f},{cy - d:.1f}" stroke="{colour}" stroke-width="2.5"/>'
        )
    shape = _SHAPES.get(kind, "circle")
    attrs = f'fill="{colour}" stroke="#ffffff" stroke-width="1.2"'
    if shape == "square":
        return f'<rect x="{cx - 5.5:.1f}" y="{cy - 5.5:.1f}" width="11" height="11" {attrs}/>'
    if shape == "diamond":
        return (
            f'<path d="M{cx:.1f},{cy - 7:.1f}L{cx + 7:.1f},{cy:.1f}L{cx:.1f},{cy + 7:.1f}'
            f'L{cx - 7:.1f},{cy:.1f}Z" {attrs}/>'
        )
    if shape == "triangle":
        return (
            f'<path d="M{cx:.1f},{cy - 7:.1f}L{cx + 7:.1f},{cy + 6:.1f}L{cx - 7:.1f},'
            f'{cy + 6:.1f}Z" {attrs}/>'
        )
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5.5" {attrs}/>'


class _Lane:
    """The second pass's drawing of one lane: its status phases, windows and marks, each
    drawn once for every request that would draw it alike (``_Runs``); webhooks after its
    requests."""

    def __init__(self, shape: _Shape, poll_tolerance: float, broken: set[int]) -> None:
        self.shape = shape
        self.tolerance = poll_tolerance
        self.broken = broken
        self.points: dict[float, str] = {}
        self.hints = _Runs()
        self.waits = _Runs()
        self.marks = _Runs()
        self.hooks: list[EntryLike] = []

    def add(self, e: EntryLike) -> None:
        """A request (not a webhook) of the lane, in order."""
        self._windows(e)
        geo = self.shape
        cx = geo.x(e.received_at)
        dropped = e.dropped is not None or e.status_code is None
        colour = answer_colour(e)
        ringed = e.seq in self.broken
        look = (round(cx), e.kind, colour, dropped, ringed)
        self.marks.add(look, e, (cx, colour, dropped, ringed))

    def _windows(self, e: EntryLike) -> None:
        if e.true_status is not None and e.status_since is not None:
            self.points.setdefault(e.status_since, e.true_status)
        geo = self.shape
        answered = e.completed_at if e.completed_at is not None else e.received_at
        if e.poll_after:
            until = answered + e.poll_after * (1 - self.tolerance)
            x0, x1 = geo.clamp(answered), geo.clamp(until)
            self.hints.add((round(x0), round(x1)), e, (x0, x1, f"poll hint {e.poll_after:g} s"))
        ra = e.retry_after
        if ra is not None and ra.not_before is not None and ra.not_before > answered:
            x0, x1 = geo.clamp(answered), geo.clamp(ra.not_before)
            self.waits.add((round(x0), round(x1)), e, (x0, x1, f"{ra.header} {ra.raw}"))

    def svg(self, index: int, label: str, detail: str, out: list[str]) -> None:
        for hook in self.hooks:
            self._windows(hook)
        geo = self.shape
        width = LABEL_W + PLOT_W + RIGHT_PAD
        top = AXIS_H + index * LANE_H
        mid = top + LANE_H / 2
        stripe = "lane-even" if index % 2 == 0 else "lane-odd"
        out.append(
            f'<rect x="0" y="{top}" width="{width}" height="{LANE_H}" class="{stripe}"/>'
            f'<text x="10" y="{mid - 2:.1f}" class="lane-label">{html.escape(_short(label))}'
            f"<title>{html.escape(label)}</title></text>"
            f'<text x="10" y="{mid + 11:.1f}" class="lane-detail">'
            f"{html.escape(_short(detail, 30))}</text>"
        )
        # status phases
        phases = sorted(self.points.items())
        for number, (since, status) in enumerate(phases):
            until = phases[number + 1][0] if number + 1 < len(phases) else geo.t1
            x0, x1 = geo.clamp(since), geo.clamp(until)
            colour = COLOURS.get(status, COLOURS["other_status"])
            out.append(
                f'<rect x="{x0:.1f}" y="{mid - BAND_H / 2:.1f}" width="{max(x1 - x0, 1):.1f}"'
                f' height="{BAND_H}" fill="{colour}" rx="3" class="band band-{html.escape(status)}">'
                f"<title>{html.escape(status)} from {since - geo.zero:.3f} s</title></rect>"
            )
        # poll hint and Retry-After windows: after the answer, before which asking again is early
        for (x0, x1, what), first, last, count in self.hints.runs():
            out.append(
                f'<rect x="{x0:.1f}" y="{mid + BAND_H / 2 + 1:.1f}" width="{max(x1 - x0, 1):.1f}"'
                f' height="5" fill="{COLOURS["poll_hint"]}" opacity="0.75" class="poll-hint">'
                f"<title>{html.escape(what)} after {_after(first, last, count)}</title></rect>"
            )
        for (x0, x1, what), first, last, count in self.waits.runs():
            out.append(
                f'<rect x="{x0:.1f}" y="{mid - BAND_H / 2 - 7:.1f}" width="{max(x1 - x0, 1):.1f}"'
                f' height="6" fill="url(#hatch)" stroke="{COLOURS["retry_after"]}"'
                f' stroke-width="0.8" class="retry-after"><title>{html.escape(what)}'
                f" after {_after(first, last, count)}</title></rect>"
            )
        # webhooks, then requests
        for e in self.hooks:
            cx = geo.x(e.received_at)
            line = html.escape(entry_line(e, geo.zero).strip())
            ok = e.status_code is not None and 200 <= e.status_code < 300
            name = "ok" if ok else "failed"
            colour = COLOURS[f"webhook_{name}"]
            out.append(
                f'<g class="webhook"><line x1="{cx:.1f}" y1="{top + 2:.1f}" x2="{cx:.1f}"'
                f' y2="{mid - 3:.1f}" stroke="{colour}" stroke-width="2.5"'
                f' marker-end="url(#arrow-{name})"/><title>{line}</title></g>'
            )
        for (cx, colour, dropped, ringed), first, last, count in self.marks.runs():
            kind = first.kind
            halo = (
                f'<circle cx="{cx:.1f}" cy="{mid:.1f}" r="10" fill="{COLOURS["violation"]}"'
                f' fill-opacity="0.3" stroke="{COLOURS["violation"]}" stroke-width="1.6"'
                ' class="halo"/>'
                if ringed
                else ""
            )
            line = html.escape(entry_line(first, geo.zero).strip())
            if count == 1:
                head, title = f'data-seq="{first.seq}"', line
            else:
                end = html.escape(entry_line(last, geo.zero).strip())
                head = f'data-seq="{first.seq}" data-count="{count}"'
                title = f"{count} requests, #{first.seq} to #{last.seq}:\n{line}\n...\n{end}"
            out.append(
                f'<g class="mark mark-{html.escape(kind)}" {head}>{halo}'
                f"{_mark(kind, cx, mid, colour, dropped)}<title>{title}</title></g>"
            )


class _Paint:
    """The second pass over a run: its drawn lanes (the first ``MAX_LANES``), and where the
    requests of its listed violations are, for their badges."""

    def __init__(
        self, shape: _Shape, violations: Sequence[tuple[int, Violation]], poll_tolerance: float
    ) -> None:
        self.shape = shape
        self.violations = violations
        broken = {seq for _, v in violations for seq in v.seqs}
        self.lanes = [_Lane(shape, poll_tolerance, broken) for _ in shape.labels]
        #: The seqs the listed violations name: when each was received (its last entry's, as
        #: a seq may be written twice) and the first drawn lane that holds it.
        self.wanted = {seq for _, v in violations[:MAX_LISTED] for seq in v.seqs}
        self.at: dict[int, float] = {}
        self.lane_of: dict[int, int] = {}

    def add(self, e: EntryLike) -> None:
        shape = self.shape
        if e.kind == "webhook":
            index = shape.hook_lane[e.job_id]
            if index < MAX_LANES:
                self.lanes[index].hooks.append(e)
        else:
            index = shape.lanes[(e.client, e.job_id)]
            if index < MAX_LANES:
                self.lanes[index].add(e)
        seq = e.seq
        if seq in self.wanted:
            self.at[seq] = e.received_at
            if index < MAX_LANES and index < self.lane_of.get(seq, MAX_LANES):
                self.lane_of[seq] = index

    def svg(self) -> str:
        geo = self.shape
        height = AXIS_H + LANE_H * len(self.lanes) + 8
        width = LABEL_W + PLOT_W + RIGHT_PAD
        out = [
            f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}"'
            f' height="{height}" viewBox="0 0 {width} {height}" role="img">',
            "<defs>"
            '<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse"'
            ' patternTransform="rotate(45)"><rect width="3" height="6"'
            f' fill="{COLOURS["retry_after"]}"/></pattern>'
            '<marker id="arrow-ok" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9"'
            f' markerHeight="9" orient="auto"><path d="M0,0L10,5L0,10Z" fill="{COLOURS["webhook_ok"]}"/>'
            "</marker>"
            '<marker id="arrow-failed" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9"'
            ' markerHeight="9" orient="auto"><path d="M0,0L10,5L0,10Z"'
            f' fill="{COLOURS["webhook_failed"]}"/></marker>'
            "</defs>",
        ]
        # axis and grid
        step = _nice_step(geo.t1 - geo.t0)
        tick = math.ceil((geo.t0 - geo.zero) / step - 1e-9) * step
        bottom = AXIS_H + LANE_H * len(self.lanes)
        while geo.zero + tick <= geo.t1:
            x = geo.x(geo.zero + tick)
            out.append(
                f'<line x1="{x:.1f}" y1="{AXIS_H - 6}" x2="{x:.1f}" y2="{bottom}" class="grid"/>'
                f'<text x="{x:.1f}" y="{AXIS_H - 10}" class="tick">{_fmt_seconds(tick)}</text>'
            )
            tick = round(tick + step, 9)
        for index, (lane, (label, detail)) in enumerate(zip(self.lanes, geo.labels, strict=True)):
            lane.svg(index, label, detail, out)
        # violations: ring the requests, number them, join them
        for number, v in self.violations[:MAX_LISTED]:  # the ones listed below: a badge each
            points = [
                (geo.x(self.at[s]), AXIS_H + self.lane_of[s] * LANE_H + LANE_H / 2)
                for s in v.seqs
                if s in self.at and s in self.lane_of
            ]
            if not points:
                continue
            colour = COLOURS["violation"]
            parts = [f'<g class="violation" data-rule="{html.escape(v.invariant)}">']
            if len({y for _, y in points}) > 1:  # across lanes: join the requests
                path = "L".join(f"{x:.1f},{y:.1f}" for x, y in points)
                parts.append(
                    f'<path d="M{path}" fill="none" stroke="{colour}" stroke-width="1.5"'
                    ' stroke-dasharray="4 3"/>'
                )
            x, y = points[-1]
            parts.append(
                f'<circle cx="{x + 11:.1f}" cy="{y - 11:.1f}" r="7.5" fill="{colour}"/>'
                f'<text x="{x + 11:.1f}" y="{y - 7.6:.1f}" class="badge">{number}</text>'
                f"<title>{number}. {html.escape(v.invariant)}: {html.escape(v.message)}</title></g>"
            )
            out.append("".join(parts))
        out.append("</svg>")
        return "\n".join(out)


class _Runs:
    """A lane's drawn items, each drawn once for every request that would draw it alike (the
    same ``look``: the same pixel, shape and colour): a tight loop's thousands of reads of one
    job are a mark a pixel, not a page of a hundred megabytes that a browser takes a minute to
    open. Each keeps what its first request would draw (``drawn``); they are drawn in the order
    of their last request, so that what shows on top at each pixel is what drawing every
    request in turn would leave there."""

    def __init__(self) -> None:
        self._by_look: dict[Hashable, list[Any]] = {}
        self._added = 0

    def add(self, look: Hashable, entry: EntryLike, drawn: Any) -> None:
        self._added += 1
        found = self._by_look.get(look)
        if found is None:
            self._by_look[look] = [drawn, entry, entry, 1, self._added]
        else:
            found[2] = entry
            found[3] += 1
            found[4] = self._added

    def runs(self) -> list[tuple[Any, EntryLike, EntryLike, int]]:
        """(what the first request draws, the first request, the last, how many), in the order
        of their last request."""
        ordered = sorted(self._by_look.values(), key=lambda item: item[4])
        return [(drawn, first, last, count) for drawn, first, last, count, _ in ordered]


def _after(first: EntryLike, last: EntryLike, count: int) -> str:
    """Which requests a window drawn once stands for."""
    if count == 1:
        return f"#{first.seq}"
    return f"#{first.seq} to #{last.seq} ({count} answers)"


def _short(text: str, width: int = 24) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, "Helvetica Neue", Arial, sans-serif; color: #1f2937; background: #f8fafc; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.sub { color: #64748b; margin: 0 0 16px; }
.verdict { display: inline-block; padding: 8px 14px; border-radius: 8px; font-weight: 600;
  font-size: 15px; margin: 4px 0 10px; }
.verdict.ok { background: #dcfce7; color: #14532d; border: 1px solid #86efac; }
.verdict.bad { background: #fee2e2; color: #7f1d1d; border: 1px solid #fca5a5; }
.chips { margin: 0 0 8px; }
.chip { display: inline-block; margin: 0 6px 6px 0; padding: 3px 10px; border-radius: 999px;
  background: #fee2e2; color: #991b1b; font-size: 13px; font-weight: 600; }
.card { background: #ffffff; border: 1px solid #e2e8f0; border-radius: 10px; padding: 14px 16px;
  margin: 10px 0; box-shadow: 0 1px 2px rgba(15, 23, 42, 0.04); }
table { border-collapse: collapse; }
td, th { text-align: left; padding: 3px 14px 3px 0; vertical-align: top; }
th { color: #64748b; font-weight: 500; }
.metrics { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 8px; }
.metric { background: #f1f5f9; border-radius: 8px; padding: 8px 10px; }
.metric b { display: block; font-size: 18px; }
.metric span { color: #64748b; font-size: 12px; }
.timeline-wrap { overflow-x: auto; }
.runinfo { margin: 0 0 6px; display: flex; flex-wrap: wrap; gap: 4px 22px; font-size: 13px; }
.runinfo em { font-style: normal; color: #64748b; margin-right: 4px; }
svg.timeline { display: block; font: 12px system-ui, -apple-system, "Segoe UI", Roboto, Arial,
  sans-serif; }
.grid { stroke: #e2e8f0; stroke-width: 1; }
.tick { fill: #64748b; text-anchor: middle; font-size: 11px; }
.lane-even { fill: #ffffff; }
.lane-odd { fill: #f8fafc; }
.lane-label { fill: #0f172a; font-weight: 600; font-size: 12px;
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.lane-detail { fill: #64748b; font-size: 11px; }
.badge { fill: #ffffff; font-size: 10px; font-weight: 700; text-anchor: middle; }
ol.violations { padding-left: 0; list-style: none; margin: 8px 0 0; }
ol.violations li { margin: 0 0 8px; padding: 8px 10px 8px 12px; border-left: 4px solid #dc2626;
  background: #fef2f2; border-radius: 0 6px 6px 0; }
ol.violations .num { display: inline-block; min-width: 20px; height: 20px; line-height: 20px;
  border-radius: 10px; background: #dc2626; color: #fff; font-size: 11px; font-weight: 700;
  text-align: center; margin-right: 6px; }
ol.violations .rule { font-weight: 700; color: #991b1b; margin-right: 6px; }
.warnings li { color: #92400e; }
.legends { margin-top: 10px; border-top: 1px solid #e2e8f0; padding-top: 8px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12.5px; color: #334155;
  margin: 3px 0; }
.legend b { width: 78px; color: #64748b; font-weight: 500; }
.legend span { display: inline-flex; align-items: center; gap: 6px; }
.legend svg { flex: none; }
.more { color: #64748b; font-style: italic; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
"""


def _legend() -> str:
    def swatch(colour: str, shape: str = "band") -> str:
        if shape == "band":
            body = f'<rect x="0" y="3" width="22" height="10" rx="2" fill="{colour}"/>'
        elif shape == "hatch":
            body = (
                '<defs><pattern id="lh" width="6" height="6" patternUnits="userSpaceOnUse"'
                ' patternTransform="rotate(45)"><rect width="3" height="6"'
                f' fill="{colour}"/></pattern></defs>'
                f'<rect x="0" y="5" width="22" height="6" fill="url(#lh)" stroke="{colour}"'
                ' stroke-width="0.8"/>'
            )
        elif shape == "strip":
            body = f'<rect x="0" y="6" width="22" height="5" fill="{colour}" opacity="0.75"/>'
        elif shape == "ring":
            body = (
                f'<circle cx="11" cy="8" r="6.5" fill="{colour}" fill-opacity="0.3"'
                f' stroke="{colour}" stroke-width="1.6"/>'
            )
        elif shape == "arrow":
            body = (
                f'<line x1="11" y1="0" x2="11" y2="11" stroke="{colour}" stroke-width="2.5"/>'
                f'<path d="M6,9L16,9L11,16Z" fill="{colour}"/>'
            )
        else:
            body = _mark(shape, 11, 8, colour, shape == "dropped")
        return f'<svg width="22" height="16" viewBox="0 0 22 16">{body}</svg>'

    grey = "#64748b"
    groups = [
        (
            "job status",
            [
                (swatch(COLOURS[s]), s.replace("_", " "))
                for s in ("queued", "processing", "succeeded", "failed", "cancelled")
            ],
        ),
        (
            "request",
            [
                (swatch(grey, "submit"), "submit"),
                (swatch(grey, "status"), "status read"),
                (swatch(grey, "content"), "content fetch"),
                (swatch(grey, "cancel"), "cancel"),
                (swatch(COLOURS["webhook_ok"], "arrow"), "webhook acknowledged"),
                (swatch(COLOURS["webhook_failed"], "arrow"), "webhook not acknowledged"),
            ],
        ),
        (
            "answer",
            [
                (swatch(COLOURS["ok"], "status"), "2xx"),
                (swatch(COLOURS["client_error"], "status"), "4xx"),
                (swatch(COLOURS["rate_limited"], "status"), "429"),
                (swatch(COLOURS["server_error"], "status"), "5xx"),
                (swatch(COLOURS["dropped"], "dropped"), "dropped connection"),
            ],
        ),
        (
            "windows",
            [
                (swatch(COLOURS["poll_hint"], "strip"), "poll hint: too early to ask again"),
                (swatch(COLOURS["retry_after"], "hatch"), "Retry-After: not before"),
                (swatch(COLOURS["violation"], "ring"), "broke an invariant (numbered below)"),
            ],
        ),
    ]
    rows = "".join(
        f'<div class="legend"><b>{name}</b>'
        + "".join(f"<span>{s}{t}</span>" for s, t in items)
        + "</div>"
        for name, items in groups
    )
    return f'<div class="legends">{rows}</div>'


def _num(value: Any, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3g}{unit}"
    return f"{value}{unit}"


def _metrics(m: dict[str, Any]) -> str:
    delay = m["detection_delay"]
    hooks = m["webhooks"]
    items = [
        (m["requests"], "requests"),
        (m["status_reads"], "status reads"),
        (m["completions"], "jobs seen to end"),
        (_num(m["polls_per_completion"]), "polls per completion"),
        (_num(delay["mean"], " s"), "detection delay (mean)"),
        (_num(delay["max"], " s"), "detection delay (max)"),
        (m["retries"], "retries"),
        (m["rate_limit_hits"], "rate-limit hits"),
        (f"{hooks['acknowledged']}/{hooks['deliveries']}", "webhooks acknowledged"),
    ]
    cells = "".join(
        f'<div class="metric"><b>{html.escape(str(v))}</b><span>{html.escape(t)}</span></div>'
        for v, t in items
    )
    return f'<div class="metrics">{cells}</div>'


def _header_table(header: dict[str, Any] | None) -> str:
    if header is None:
        return '<p class="runinfo">No run header (a journal from an older fakeprovider).</p>'
    rows = [
        ("scenario", f"{header.get('scenario')} ({header.get('digest')})"),
        ("dialect", header.get("dialect")),
        ("time scale", header.get("time_scale")),
        ("seed", header.get("seed")),
        ("started", header.get("started")),
        ("fakeprovider", header.get("version")),
    ]
    body = "".join(f"<span><em>{html.escape(k)}</em> {html.escape(str(v))}</span>" for k, v in rows)
    return f'<p class="runinfo">{body}</p>'


def html_report(
    report: Report,
    *,
    title: str = "fakeprovider report",
    entries: Callable[[], Iterable[EntryLike]] | None = None,
    layout: Layout | None = None,
) -> str:
    """The report as one self-contained HTML page.

    ``entries``: for a report that holds no entries (a streamed check's), a callable that reads
    the journal's entries afresh, in ``order_entries``'s order, each time it is called: the
    page is drawn from two passes over them (the runs' lanes and spans, then what the drawn
    lanes show), keeping no more than it draws, so a journal of millions of entries makes its
    page in memory that does not grow with them. Default: the report's own entries.
    ``layout``: the first pass, already noted over the same entries (``Layout.note``): only
    the second is made.
    """
    read: Callable[[], Iterable[EntryLike]] = (
        (lambda: order_entries(report.entries)) if entries is None else entries
    )
    if layout is None or not layout.complete:
        layout = Layout()
        collections.deque(layout.note(read()), maxlen=0)
    shapes = layout.shapes
    numbered = list(enumerate(report.violations, start=1))
    mine: list[list[tuple[int, Violation]]] = [[] for _ in shapes]
    for n, v in numbered:
        if 0 <= v.run < len(mine):
            mine[v.run].append((n, v))
    paints = [
        _Paint(shape, mine[number], report.limits.poll_tolerance)
        for number, shape in enumerate(shapes)
    ]
    for number, e in _runs(read()):
        paints[number].add(e)
    if report.ok:
        verdict = '<div class="verdict ok">No invariant violations</div>'
        chips = ""
    else:
        verdict = f'<div class="verdict bad">{len(report.violations)} invariant violation(s)</div>'
        chips = (
            '<div class="chips">'
            + "".join(
                f'<span class="chip">{html.escape(rule)} &times; {n}</span>'
                for rule, n in report.rule_counts().items()
            )
            + "</div>"
        )
    clients = len(report.metrics["clients"])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">{report.metrics["requests"]} request(s) from {clients} client(s)'
        f" in {len(shapes)} run(s)</p>",
        verdict,
        chips,
        f'<div class="card">{_metrics(report.metrics)}</div>',
    ]
    for number, (shape, paint) in enumerate(zip(shapes, paints, strict=True)):
        header = shape.header
        name = header.get("scenario") if header else None
        heading = f"Run {number}" + (f": {name}" if name else "")
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(f'<div class="card timeline-wrap">{_header_table(header)}{paint.svg()}')
        if len(shape.lanes) > MAX_LANES:
            parts.append(
                f'<p class="more">{len(shape.lanes) - MAX_LANES} more lane(s) not drawn'
                f" (the first {MAX_LANES} are).</p>"
            )
        parts.append(f"{_legend()}</div>")
        listed = mine[number]
        if listed:
            items = "".join(
                f'<li><span class="num">{n}</span><span class="rule">{html.escape(v.invariant)}'
                f"</span>{html.escape(v.message)}</li>"
                for n, v in listed[:MAX_LISTED]
            )
            parts.append(f'<h3>Violations</h3><ol class="violations">{items}</ol>')
            if len(listed) > MAX_LISTED:
                parts.append(
                    f'<p class="more">{len(listed) - MAX_LISTED} more violation(s) not listed'
                    f" (the first {MAX_LISTED} are; all are ringed above; `fakeprovider check"
                    " --max-violations 0` lists every one).</p>"
                )
    if report.warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in report.warnings)
        parts.append(f'<h2>Warnings</h2><ul class="warnings">{items}</ul>')
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html_report(
    report: Report,
    path: str | Path,
    *,
    title: str = "fakeprovider report",
    entries: Callable[[], Iterable[EntryLike]] | None = None,
) -> Path:
    """Write ``html_report(report, entries=entries)`` to ``path`` (UTF-8); returns the path."""
    target = Path(path)
    target.write_text(html_report(report, title=title, entries=entries), encoding="utf-8")
    return target
