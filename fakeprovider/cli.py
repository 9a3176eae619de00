"""The ``fakeprovider`` command. ``main()`` only parses options and calls the library."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from ._suggest import did_you_mean
from .errors import ScenarioError

__all__ = ["main"]

Command = Callable[[argparse.Namespace], int]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value}")
    return value


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 3600, got {text!r}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port between 0 and 65535, got {value}")
    return value


def cmd_serve(args: argparse.Namespace) -> int:
    from .dialects import DIALECTS, unknown_dialect
    from .server import serve_forever
    from .service import FakeProvider

    if args.dialect is not None and args.dialect not in DIALECTS:
        print(f"fakeprovider serve: {unknown_dialect(args.dialect)}", file=sys.stderr)
        return 2
    sink: TextIO | None = None
    try:
        provider = FakeProvider(
            args.scenario,
            dialect=args.dialect,
            seed=args.seed,
            time_scale=args.time_scale,
            journal_memory=args.journal_memory,
            allow_webhook_hosts=args.allow_webhook_host,
        )
        if args.journal is not None:
            sink = open(args.journal, "a", encoding="utf-8")  # noqa: SIM115 - closed below
            provider.journal.attach(sink)  # the run header first: refused if it cannot go in
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
        return 2
    except OSError as exc:
        if sink is not None:
            with contextlib.suppress(OSError):
                sink.close()
        print(
            f"fakeprovider serve: cannot write the journal {args.journal}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2

    from .server import admin_token_for, is_loopback

    admin_token = admin_token_for(args.host, args.admin_token)

    def ready(url: str) -> None:
        print(url, flush=True)
        if not is_loopback(args.host):
            shown = "given with --admin-token" if args.admin_token else f"token: {admin_token}"
            print(
                f"fakeprovider serve: warning: {args.host} is not a loopback address, so"
                " anyone who can reach it can use the fake; the admin API wants"
                f" 'Authorization: Bearer <token>' ({shown})",
                file=sys.stderr,
                flush=True,
            )
        scenario = provider.scenario
        scale = f", time scale {args.time_scale:g}" if args.time_scale != 1.0 else ""
        print(
            f"fakeprovider {__version__}: serving {scenario.name!r} in the {provider.dialect.name} dialect"
            f"{scale} at {url} (Ctrl+C to stop)",
            file=sys.stderr,
            flush=True,
        )

    try:
        serve_forever(
            provider,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            on_ready=ready,
            idle_timeout=args.idle_timeout,
            admin_token=admin_token,
        )
    except OSError as exc:
        print(
            f"fakeprovider serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    finally:
        if sink is not None:
            with contextlib.suppress(OSError):  # already reported when writing failed
                sink.close()
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from .scenario import load_scenario

    status = 0
    for name in args.files:
        try:
            load_scenario(Path(name) if not _is_bundled(name) else name)
        except ScenarioError as exc:
            for problem in exc.problems:
                print(problem)
            status = 1
        else:
            if not args.quiet:
                print(f"{name}: ok", file=sys.stderr)
    return status


def _is_bundled(name: str) -> bool:
    from .scenario import bundled_scenarios

    return not Path(name).exists() and name in bundled_scenarios()


def cmd_scenarios(args: argparse.Namespace) -> int:
    from .scenario import bundled_scenarios, load_scenario

    names = bundled_scenarios()
    width = max(len(n) for n in names)
    for name in names:
        print(f"{name:<{width}}  {load_scenario(name).description}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from .explain import explain
    from .scenario import load_scenario

    try:
        scenario = load_scenario(args.scenario, time_scale=args.time_scale)
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
        return 2
    sys.stdout.write(explain(scenario))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .scenario import dump_schema

    sys.stdout.write(dump_schema())
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, saying which command or choice was meant when one is mistyped."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(repr(choice) for choice in action.choices)
            hint = did_you_mean(value, action.choices)
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}{hint}; choose from {choices}"
            )


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=28)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        # argparse measures the column before any command exists: make room for the names
        if isinstance(action, argparse._SubParsersAction) and action.choices:
            widest = max(len(name) for name in action.choices)
            self._action_max_length = max(
                self._action_max_length, self._current_indent + 4 + widest
            )


def formatter(prog: str) -> argparse.HelpFormatter:
    """Help laid out as written (examples keep their lines), commands in one column."""
    return _Formatter(prog)


def examples(*lines: str) -> str:
    """An ``epilog``: example command lines, each with what it does."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def build_parser() -> argparse.ArgumentParser:
    # sub-commands' parsers are _Parsers too (argparse makes them of the parent's class)
    parser: argparse.ArgumentParser = _Parser(
        prog="fakeprovider",
        description="A scriptable fake of slow, asynchronous (202 Accepted, then poll) HTTP APIs.",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider scenarios                      # what is bundled",
            "fakeprovider serve transient-5xx --journal run.jsonl",
            "fakeprovider check run.jsonl --scenario transient-5xx",
            "fakeprovider COMMAND --help                 # each command's options",
        ),
    )
    parser.add_argument("--version", action="version", version=f"fakeprovider {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = sub.add_parser(
        "serve",
        help="serve a scenario over HTTP",
        description="Serve SCENARIO (a bundled name or a file) until Ctrl+C or SIGTERM. Prints the base URL "
        "on standard output first.",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider serve                          # slow-success on http://127.0.0.1:8000",
            "fakeprovider serve rate-limited --port 0    # any free port; the URL comes first",
            "fakeprovider serve my-scenario.yaml --journal run.jsonl --time-scale 0.1",
            "fakeprovider serve slow-success --dialect openai-videos",
        ),
    )
    serve.add_argument(
        "scenario",
        nargs="?",
        default="slow-success",
        metavar="SCENARIO",
        help="bundled scenario name or path to a YAML file (default: slow-success)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument(
        "--port", type=_port, default=8000, help="port to bind, 0 for any free one (default: 8000)"
    )
    serve.add_argument(
        "--dialect",
        default=None,
        metavar="NAME",
        help="wire dialect (default: the scenario's, else generic)",
    )
    serve.add_argument(
        "--journal",
        type=Path,
        default=None,
        metavar="PATH",
        help="append every request to this JSONL file as it completes",
    )
    serve.add_argument(
        "--admin-token",
        default=None,
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on the admin API (health checks excepted);"
        " on a non-loopback --host one is made up and printed when not given",
    )
    serve.add_argument(
        "--journal-memory",
        type=_positive_int,
        default=None,
        metavar="N",
        help="keep only the last N entries in memory (the --journal file still gets every"
        " one, and the admin report and journal read it); default: keep all",
    )
    serve.add_argument(
        "--idle-timeout",
        type=_timeout,
        default=5.0,
        metavar="SECONDS",
        help="close a connection that has no request in progress for this long (default: 5)",
    )
    serve.add_argument(
        "--seed", type=int, default=None, metavar="N", help="override the scenario's seed"
    )
    serve.add_argument(
        "--time-scale",
        type=_positive_float,
        default=1.0,
        metavar="F",
        help="multiply every duration in the scenario by F (0.1 runs a 93 s job in 9.3 s)",
    )
    serve.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level",
    )
    serve.add_argument(
        "--allow-webhook-host",
        action="append",
        default=[],
        metavar="HOST",
        help="let webhooks go to HOST too (by default only to loopback addresses and"
        " localhost); repeat for several hosts",
    )
    serve.set_defaults(func=cmd_serve)

    validate = sub.add_parser(
        "validate",
        help="check scenario files",
        description="Validate scenario files. Exit 0 when all are valid, else 1 with one "
        "'file:line:col: path: message' line per problem.",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider validate my-scenario.yaml",
            "fakeprovider validate -q scenarios/*.yaml   # print only the problems",
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument(
        "-q", "--quiet", action="store_true", help="print nothing for valid files"
    )
    validate.set_defaults(func=cmd_validate)

    scenarios = sub.add_parser(
        "scenarios",
        help="list the bundled scenarios",
        description="List the bundled scenarios with one-line descriptions.",
        formatter_class=formatter,
        epilog=examples("fakeprovider scenarios"),
    )
    scenarios.set_defaults(func=cmd_scenarios)

    explain = sub.add_parser(
        "explain",
        help="describe a scenario's timeline in words",
        description="Describe what SCENARIO does, job by job and fault by fault.",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider explain transient-5xx",
            "fakeprovider explain my-scenario.yaml --time-scale 0.1",
        ),
    )
    explain.add_argument("scenario", metavar="SCENARIO", help="bundled scenario name or path")
    explain.add_argument(
        "--time-scale",
        type=_positive_float,
        default=1.0,
        metavar="F",
        help="show the timeline compressed by F (default: 1)",
    )
    explain.set_defaults(func=cmd_explain)

    schema = sub.add_parser(
        "schema",
        help="print the scenario format's JSON Schema",
        description="Print the JSON Schema of the scenario format (for editors).",
        formatter_class=formatter,
        epilog=examples("fakeprovider schema > scenario.schema.json"),
    )
    schema.set_defaults(func=cmd_schema)

    from ._check_cli import add_check_parser

    add_check_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Command = args.func
    try:
        return func(args)
    except BrokenPipeError:
        # the reader went away (``fakeprovider check run.jsonl | head``): stop quietly, and
        # keep Python from complaining again when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
