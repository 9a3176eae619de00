"""The ``fakeprovider check`` command: read a JSONL journal, print the invariant report.

Exit 0 when no invariant is broken, 1 when one is, 2 on bad input (an unreadable file, a bad
JSONL line, a bad limit or an unknown scenario).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from .errors import ScenarioError
from .invariants import Limits, check, runs_with_headers
from .journal import read_journal

__all__ = ["add_check_parser", "cmd_check"]

#: CLI option -> Limits field; every value is parsed by ``Limits.from_strings``.
_OPTIONS = {
    "--max-retries": (
        "max_retries",
        "N",
        "consecutive failed attempts allowed per job and route (default 5)",
    ),
    "--deadline": (
        "deadline",
        "DURATION",
        "the client's deadline per job, e.g. 5m (default: not checked)",
    ),
    "--deadline-slack": ("deadline_slack", "DURATION", "grace after the deadline (default 1s)"),
    "--retrievals": (
        "retrievals",
        "N",
        "content fetches expected per succeeded job (default: at most 1)",
    ),
    "--poll-tolerance": (
        "poll_tolerance",
        "F",
        "fraction of the poll hint a poll may come early by (default 0.1)",
    ),
    "--status-rate": ("status_rate", "R", "status reads per second across jobs (opt-in)"),
    "--status-rate-window": (
        "status_rate_window",
        "DURATION",
        "window for --status-rate (default 10s)",
    ),
    "--ack-limit": ("ack_limit", "DURATION", "how fast webhooks must be acknowledged (default 5s)"),
    "--retry-after-scope": (
        "retry_after_scope",
        "SCOPE",
        "auto (429: account, a too_many_active_jobs 429: new submits; else job), account or job",
    ),
    "--date-slack": ("date_slack", "DURATION", "slack for HTTP-date Retry-After (default 1s)"),
}


def add_check_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .cli import examples, formatter

    parser = sub.add_parser(
        "check",
        help="check a journal against the client invariants",
        description="Judge every client in JOURNAL (a JSONL file written by 'serve --journal') "
        "against the invariants. Exit 0 when clean, 1 on violations, 2 on bad input (a journal "
        "with no client request in it is bad input: nothing was tested).",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider check run.jsonl",
            "fakeprovider check run.jsonl --scenario transient-5xx   # its expect: limits",
            "fakeprovider check run.jsonl --deadline 5m --max-retries 3 --json",
            "curl -s 'http://127.0.0.1:8000/__admin/report?deadline=5m'  # same, from the server",
        ),
    )
    parser.add_argument("journal", metavar="JOURNAL", help="the JSONL journal file ('-' for stdin)")
    parser.add_argument(
        "--scenario",
        metavar="NAME",
        default=None,
        help="start from this scenario's expect: limits (bundled name or path)",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=None,
        metavar="F",
        help="the time scale the journal was recorded at, for --scenario (default: the run"
        " header's, else 1)",
    )
    for option, (dest, metavar, text) in _OPTIONS.items():
        parser.add_argument(option, dest=f"limit_{dest}", metavar=metavar, default=None, help=text)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    try:
        source = getattr(sys.stdin, "buffer", sys.stdin) if args.journal == "-" else args.journal
        entries = read_journal(source)
    except OSError as exc:
        print(
            f"fakeprovider check: cannot read {args.journal}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    except (ValueError, UnicodeDecodeError) as exc:
        print(f"fakeprovider check: {exc}", file=sys.stderr)
        return 2
    try:
        run_limits = _run_limits(args, [header for header, _ in runs_with_headers(entries)])
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"fakeprovider check: {exc}", file=sys.stderr)
        return 2
    if not any(entry.kind not in ("admin", "webhook") for entry in entries):
        print(
            f"fakeprovider check: {args.journal} holds no client request, so nothing was tested;"
            " did the client reach the fake?",
            file=sys.stderr,
        )
        return 2
    report = check(entries, run_limits[0] if run_limits else None, run_limits=run_limits)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.render())
    return 0 if report.ok else 1


def _run_limits(args: argparse.Namespace, headers: list[dict[str, Any] | None]) -> list[Limits]:
    """Each run's limits: ``--scenario``'s ``expect:`` (at ``--time-scale``, else the run
    header's time scale), else the limits in the run header, else the defaults; the limit
    options on top. Raises ``ScenarioError`` or ``ValueError`` (bad option or header)."""
    given = {
        dest: getattr(args, f"limit_{dest}")
        for dest, _, _ in _OPTIONS.values()
        if getattr(args, f"limit_{dest}") is not None
    }
    if args.scenario is not None and args.time_scale is None and None in headers:
        print(
            f"fakeprovider check: warning: {args.journal} has no run header (it was written by"
            f" an older fakeprovider), so {args.scenario!r} is taken at time scale 1; pass"
            " --time-scale F if it was served at another",
            file=sys.stderr,
        )
    scenarios: dict[float, Limits] = {}
    known = {f.name for f in dataclasses.fields(Limits)}
    out: list[Limits] = []
    for header in headers or [None]:
        if args.scenario is not None:
            scale = args.time_scale
            if scale is None:
                scale = float(header.get("time_scale", 1.0)) if header is not None else 1.0
            if scale not in scenarios:
                from .scenario import load_scenario

                scenario = load_scenario(args.scenario, time_scale=scale)
                scenarios[scale] = Limits.from_expect(scenario.expect, time_scale=scale)
            base = scenarios[scale]
        elif header is not None and isinstance(header.get("limits"), dict):
            values = {k: v for k, v in header["limits"].items() if k in known}
            try:
                base = Limits(**values)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"the run header of {args.journal} holds bad limits: {exc}"
                ) from None
        else:
            base = Limits()
        out.append(Limits.from_strings(given, base))
    return out
