"""The ``fakeprovider`` command. ``main()`` only parses options and calls the library."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ._cli_options import (
    add_serve_options,
    examples,
    formatter,
    positive_int,
    request_listener,
    time_scale,
    timeout,
)
from ._suggest import did_you_mean
from ._version import __version__
from .errors import ScenarioError

if TYPE_CHECKING:
    pass

__all__ = ["main"]

Command = Callable[[argparse.Namespace], int]


def cmd_serve(args: argparse.Namespace) -> int:
    from .dialects import dialect_name
    from .journal import BatchedSink
    from .provider import FakeProvider
    from .server import serve_forever

    try:
        if args.dialect is not None:
            dialect_name(args.dialect)
    except ValueError as exc:
        print(f"fakeprovider serve: {exc}", file=sys.stderr)
        return 2
    sink: TextIO | None = None
    try:
        provider = FakeProvider(
            args.scenario,
            dialect=args.dialect,
            seed=args.seed,
            time_scale=args.time_scale,
            journal_memory=args.journal_memory,
            journal_listener=request_listener(args),
            allow_webhook_hosts=args.allow_webhook_host,
        )
        if args.journal is not None:
            sink = open(args.journal, "a", encoding="utf-8")  # noqa: SIM115 - closed below
            # the run header first: refused if it cannot go in; then written a batch at a time
            provider.journal.attach(BatchedSink(sink))
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

    from .server import admin_token_for, is_loopback, resolve_stack

    admin_token = admin_token_for(args.host, args.admin_token)
    http, loop = resolve_stack(args.http, args.loop)  # the options checked what is installed

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
        if args.ready_file is not None:
            write_ready_file(args.ready_file, url)
        scenario = provider.scenario
        scale = f", time scale {args.time_scale:g}" if args.time_scale != 1.0 else ""
        print(
            f"fakeprovider {__version__}: serving {scenario.name!r} in the {provider.dialect.name} dialect"
            f"{scale} at {url} on {http} + {loop} (Ctrl+C to stop)",
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
            http=http,
            loop=loop,
        )
    except OSError as exc:
        print(
            f"fakeprovider serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    finally:
        if sink is not None:
            provider.journal.close()  # the last batch written (a failure is reported once)
            with contextlib.suppress(OSError):  # already reported when writing failed
                sink.close()
        if args.ready_file is not None:
            with contextlib.suppress(OSError):
                args.ready_file.unlink()
    return 0


def write_ready_file(path: Path, url: str) -> None:
    """Write ``url`` and a newline to ``path`` at once (a reader never sees half of it)."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(url + "\n", encoding="utf-8")
    os.replace(partial, path)


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


def cmd_journal(args: argparse.Namespace) -> int:
    from ._table import journal_table
    from .journal import read_journal

    if args.journal == "-" and sys.stdin is None:
        print("fakeprovider journal: cannot read -: standard input is closed", file=sys.stderr)
        return 2
    try:
        source = getattr(sys.stdin, "buffer", sys.stdin) if args.journal == "-" else args.journal
        entries = read_journal(source)
    except OSError as exc:
        print(
            f"fakeprovider journal: cannot read {args.journal}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    except (ValueError, UnicodeDecodeError) as exc:
        print(f"fakeprovider journal: {exc}", file=sys.stderr)
        return 2
    print(journal_table(entries))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .scenario import dump_schema

    if args.output is None:
        sys.stdout.write(dump_schema())
        return 0
    try:
        args.output.write_text(dump_schema(), encoding="utf-8")
    except OSError as exc:
        print(
            f"fakeprovider schema: cannot write {args.output}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    print(f"wrote the scenario schema to {args.output}", file=sys.stderr)
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    from ._starter import NAME_PATTERN, copy_of, starter

    if not NAME_PATTERN.match(args.name):
        print(
            "fakeprovider new: NAME names the scenario and its file: use letters, digits, '.',"
            f" '_' and '-', got {args.name!r}",
            file=sys.stderr,
        )
        return 2
    try:
        text = starter(args.name) if args.source is None else copy_of(args.source, args.name)
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    target = Path(args.output if args.output is not None else f"{args.name}.yaml")
    if target.exists() and not args.force:
        print(
            f"fakeprovider new: {target} already exists; choose another -o PATH, or --force to"
            " overwrite it",
            file=sys.stderr,
        )
        return 2
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"fakeprovider new: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    what = "a starter scenario" if args.source is None else f"a copy of {args.source}"
    print(
        f"wrote {what} to {target}; next: fakeprovider explain {target}",
        file=sys.stderr,
    )
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


def build_parser() -> argparse.ArgumentParser:
    # sub-commands' parsers are _Parsers too (argparse makes them of the parent's class)
    parser: argparse.ArgumentParser = _Parser(
        prog="fakeprovider",
        description="A scriptable fake of slow, asynchronous (202 Accepted, then poll) HTTP APIs.",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider scenarios                      # what is bundled",
            "fakeprovider serve transient-5xx --journal run.jsonl",
            "fakeprovider check run.jsonl",
            "fakeprovider run transient-5xx -- node client.js   # serve, run, check, stop",
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
            "fakeprovider serve slow-success --dialect gemini",
            "fakeprovider serve long-render --journal soak.jsonl --journal-memory 10000",
            "fakeprovider serve --host 0.0.0.0 --admin-token s3cret   # others can reach it",
            "fakeprovider serve --http h11 --loop asyncio  # the pure-Python stack, as a fallback",
        ),
    )
    serve.add_argument(
        "scenario",
        nargs="?",
        default="slow-success",
        metavar="SCENARIO",
        help="bundled scenario name or path to a YAML file (default: slow-success)",
    )
    add_serve_options(serve, port=8000)
    serve.add_argument(
        "--ready-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="write the base URL to PATH once listening (removed again on exit), for scripts"
        " that start the server in the background",
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
        type=positive_int,
        default=None,
        metavar="N",
        help="keep only the last N entries in memory (the --journal file still gets every"
        " one, and the admin report and journal read it); default: keep all",
    )
    serve.add_argument(
        "--idle-timeout",
        type=timeout,
        default=5.0,
        metavar="SECONDS",
        help="close a connection that has no request in progress for this long (default: 5)",
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
        type=time_scale,
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
        epilog=examples(
            "fakeprovider schema -o fakeprovider.schema.json   # then point your editor at it",
            "fakeprovider schema > scenario.schema.json",
        ),
    )
    schema.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the schema to FILE (overwritten) instead of standard output",
    )
    schema.set_defaults(func=cmd_schema)

    new = sub.add_parser(
        "new",
        help="write a new scenario file to start from",
        description="Write a commented starter scenario called NAME (or, with --from, a copy of a"
        " bundled scenario or a file, renamed NAME) to NAME.yaml or -o PATH. The file validates"
        " as written; an existing file is kept unless --force.",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider new my-render                  # writes my-render.yaml",
            "fakeprovider new flaky --from transient-5xx -o tests/scenarios/flaky.yaml",
            "fakeprovider new my-render -o -             # print it instead",
        ),
    )
    new.add_argument("name", metavar="NAME", help="the scenario's name (and file name)")
    new.add_argument(
        "--from",
        dest="source",
        default=None,
        metavar="SCENARIO",
        help="copy this bundled scenario or file (comments kept) instead of the starter",
    )
    new.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="PATH",
        help="where to write it (default: NAME.yaml; '-' for standard output)",
    )
    new.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
    new.set_defaults(func=cmd_new)

    from ._check_cli import add_check_parser, add_report_parser
    from ._run_cli import add_run_parser

    add_check_parser(sub)
    add_run_parser(sub)
    add_report_parser(sub)

    journal = sub.add_parser(
        "journal",
        help="print a journal as a table",
        description="Print JOURNAL (a JSONL file written by 'serve --journal' or 'run') as a"
        " table, one line per request: seq, time since its run started, request, answer, the job"
        " status shown, error code, Retry-After and fault. Each run header is a line of its own.",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider journal run.jsonl",
            "fakeprovider journal run.jsonl | grep -v ' -> 200'   # only what was not a 200",
        ),
    )
    journal.add_argument(
        "journal", metavar="JOURNAL", help="the JSONL journal file ('-' for stdin)"
    )
    journal.set_defaults(func=cmd_journal)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` and give its exit status. With no ``argv`` (``sys.argv``'s:
    the console script, ``python -m fakeprovider``), ``check`` ends the process itself once its
    report is written and flushed, rather than free what it judged (``_check_cli._exit``)."""
    given = list(sys.argv[1:] if argv is None else argv)
    command: list[str] | None = None
    if given[:1] == ["run"] and "--" in given:
        # argparse hands what follows '--' to the top parser, not to the subcommand
        cut = given.index("--")
        given, command = given[:cut], given[cut + 1 :]
    args = build_parser().parse_args(given)
    # with no argv, this is the program (the console script, ``python -m fakeprovider``):
    # ``check`` then ends the process itself once its report is out (``_check_cli._exit``)
    args.ends_process = argv is None
    if command is not None:
        args.command = [*args.command, *command]
    func: Command = args.func
    try:
        return func(args)
    except BrokenPipeError:
        # the reader went away (``fakeprovider check run.jsonl | head``): stop quietly, and
        # keep Python from complaining again when it flushes stdout at exit
        _silence_stdout()
        return 1
    except OSError as exc:
        if exc.errno not in _FULL or exc.filename is not None:
            return _internal(args.command, exc)
        # the output could not be written (a full disk or quota under `> report.json`): the
        # environment's failure, not ours
        print(
            f"fakeprovider {args.command}: cannot write its output: {exc.strerror}", file=sys.stderr
        )
        try:
            sys.stdout.flush()
        except OSError:  # keep Python's own flush at exit from failing again
            _silence_stdout()
        return 2
    except Exception as exc:
        return _internal(args.command, exc)


def _silence_stdout() -> None:
    """Point standard output at the null device, so Python's flush at exit cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


#: The errors only a write gives: no room left on the device or in the quota, a file too large.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _internal(command: str | None, exc: Exception) -> int:
    """A bug of ours, never the user's input: exit 3 (not 1, "invalid" or "violations", nor 2,
    "bad input") with one line; FAKEPROVIDER_DEBUG=1 shows the traceback."""
    if os.environ.get("FAKEPROVIDER_DEBUG"):
        import traceback

        traceback.print_exc()
    print(internal_error(command, exc), file=sys.stderr)
    return 3


def internal_error(command: str | None, exc: BaseException) -> str:
    """The one line an internal error is reported with."""
    text = " ".join(str(exc).split())
    if len(text) > 200:
        text = text[:197] + "..."
    what = type(exc).__name__ + (f": {text}" if text else "")
    return (
        f"fakeprovider {command or ''}".rstrip()
        + f": internal error ({what}); this is a bug in fakeprovider, please report it with"
        " the command line (FAKEPROVIDER_DEBUG=1 shows the traceback)"
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
