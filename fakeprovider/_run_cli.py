"""``fakeprovider run SCENARIO [options] -- COMMAND [ARGS...]``: the whole CI recipe in one
command.

Serves SCENARIO on a free port (in this process, so it can never be left running), gives the
command ``FAKEPROVIDER_URL`` and ``FAKEPROVIDER_JOURNAL``, runs it once the server answers,
then stops the server, checks the journal, writes the reports asked for and says what failed:
exit 0 when the command succeeded and no invariant broke, 1 when either did (or the command
timed out, or made no request at all), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from .errors import ScenarioError

__all__ = ["add_run_parser", "cmd_run"]

PROG = "fakeprovider run"
#: How long the command gets to end after SIGINT/SIGTERM before it is killed.
_GRACE = 5.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def add_run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ._check_cli import add_format_options, add_limit_options
    from ._cli_options import add_serve_options, examples, formatter

    parser = sub.add_parser(
        "run",
        help="serve a scenario, run a command against it, check the journal",
        usage="fakeprovider run SCENARIO [options] -- COMMAND [ARGS...]",
        description=(
            "Serve SCENARIO on a free port, run COMMAND with FAKEPROVIDER_URL (the base URL) and\n"
            "FAKEPROVIDER_JOURNAL (the journal file) in its environment, then stop the server,\n"
            "check the journal and write the reports asked for.\n\n"
            "Exit 0 when the command succeeded and no invariant was broken; 1 when the command\n"
            "failed, timed out or made no request, or an invariant broke (the last line says\n"
            "which); 2 on bad usage. The server never outlives the command, Ctrl+C included."
        ),
        formatter_class=formatter,
        epilog=examples(
            'fakeprovider run transient-5xx -- node client.js "$FAKEPROVIDER_URL"',
            "fakeprovider run slow-success --time-scale 0.1 -- ./my-client --base-url-env"
            " FAKEPROVIDER_URL",
            "fakeprovider run rate-limited --junit report.xml --report-html report.html -- make"
            " e2e",
            "fakeprovider run deadline-expiry --format github --deadline 90s -- npm test",
            "fakeprovider run slow-success --http h11 --loop asyncio -- make e2e   # pure Python",
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="bundled scenario name or path")
    parser.add_argument(
        "command", nargs="*", metavar="COMMAND", help="the command to run, after '--'"
    )
    add_serve_options(parser, port=0)
    parser.add_argument(
        "--ready-timeout",
        type=_seconds,
        default=10.0,
        metavar="S",
        help="give up when the server does not answer within S seconds (default 10)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="S",
        help="stop the command after S seconds and fail (default: no limit)",
    )
    reports = parser.add_argument_group("reports (written whatever the verdict)")
    reports.add_argument("--junit", type=Path, metavar="PATH", help="JUnit XML, one case per rule")
    reports.add_argument("--report-html", type=Path, metavar="PATH", help="the HTML timeline")
    reports.add_argument("--report-json", type=Path, metavar="PATH", help="the report as JSON")
    add_format_options(parser)
    add_limit_options(parser)
    parser.set_defaults(func=cmd_run)


class _Stopped(Exception):
    """SIGINT or SIGTERM arrived while the command ran."""


class _StopSignals:
    """SIGINT and SIGTERM, while the command runs: held until ``arm()``, then raised as
    ``_Stopped`` (once; later ones are held, as ``_end`` gives the command its grace).

    Held, not raised, while the command is being started: a signal that came between the start
    and the ``try`` that ends the command used to leave the command running (SIGTERM's default
    action ended this process alone; SIGINT's ``KeyboardInterrupt`` was raised outside the
    ``try``). ``arm()`` raises for a signal held meanwhile.
    """

    def __init__(self) -> None:
        self.armed = False
        self.held = False

    def _stop(self, sig: int, frame: FrameType | None) -> None:
        if not self.armed:
            self.held = True
            return
        self.armed = False
        raise _Stopped

    def arm(self) -> None:
        self.armed = True
        if self.held:
            self.held = False
            self.armed = False
            raise _Stopped

    def disarm(self) -> None:
        self.armed = False


@contextlib.contextmanager
def _stop_signals() -> Iterator[_StopSignals]:
    signals = _StopSignals()
    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, signals._stop)
    except ValueError:  # pragma: no cover - not the main thread (run() called from a thread)
        signals.arm()  # nothing is held: Ctrl+C is KeyboardInterrupt, as before
    try:
        yield signals
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)


def _end(process: subprocess.Popen[bytes]) -> None:
    """Ask the command to stop (SIGINT, as Ctrl+C would), then make it."""
    if process.poll() is not None:
        return
    with contextlib.suppress(OSError):
        process.send_signal(signal.SIGINT)
    try:
        process.wait(_GRACE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _say(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    from ._cli_options import request_listener
    from .dialects import dialect_name
    from .journal import BatchedSink
    from .provider import FakeProvider
    from .server import ServerThread

    command: list[str] = args.command
    if not command:
        _say("no command given; usage: fakeprovider run SCENARIO [options] -- COMMAND [ARGS...]")
        return 2
    try:
        if args.dialect is not None:
            dialect_name(args.dialect)
    except ValueError as exc:
        _say(str(exc))
        return 2
    with contextlib.ExitStack() as stack:
        if args.journal is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="fakeprovider-"))
            journal = Path(folder) / "journal.jsonl"
        else:
            journal = args.journal
        try:
            sink: TextIO = stack.enter_context(journal.open("a", encoding="utf-8"))
            provider = FakeProvider(
                args.scenario,
                dialect=args.dialect,
                seed=args.seed,
                time_scale=args.time_scale,
                journal_sink=BatchedSink(sink),
                journal_listener=request_listener(args),
                allow_webhook_hosts=args.allow_webhook_host,
            )
        except ScenarioError as exc:
            print(exc, file=sys.stderr)
            return 2
        except OSError as exc:
            _say(f"cannot write the journal {journal}: {exc.strerror or exc}")
            return 2
        stack.callback(provider.journal.close)  # before the file: its last batch goes in
        try:
            server = ServerThread(
                provider,
                host=args.host,
                port=args.port,
                log_level=args.log_level,
                allow_webhook_hosts=args.allow_webhook_host,
                http=args.http,
                loop=args.loop,
            )
        except OSError as exc:
            _say(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
            return 2
        try:
            server.start(timeout=args.ready_timeout)
        except RuntimeError:
            _say(f"the server at {server.url} did not start within {args.ready_timeout:g} s")
            return 2
        stack.callback(server.stop)
        outcome = _run_command(command, server.url, journal, args.timeout)
        server.stop()
        sink.flush()
        if outcome == "interrupted":
            _say("interrupted; the command and the server were stopped")
            return 130
        return _verdict(args, journal, server.url, outcome)
    raise AssertionError("unreachable")  # pragma: no cover - the with block returns


def _run_command(command: list[str], url: str, journal: Path, timeout: float | None) -> str | int:
    """Run ``command`` with the fake's URL and journal in its environment: its exit status,
    or 'timeout', 'interrupted' or 'not run' (with a line saying why)."""
    env = {**os.environ, "FAKEPROVIDER_URL": url, "FAKEPROVIDER_JOURNAL": str(journal.resolve())}
    _say(f"serving at {url}; running {shlex.join(command)}")
    with _stop_signals() as signals:
        try:
            process = subprocess.Popen(command, env=env)
        except OSError as exc:
            _say(f"cannot run {command[0]!r}: {exc.strerror or exc}")
            return "not run"
        try:
            signals.arm()
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            _end(process)
            return "timeout"
        except (KeyboardInterrupt, _Stopped):
            _end(process)
            return "interrupted"
        finally:
            signals.disarm()
            _end(process)


def _verdict(args: argparse.Namespace, journal: Path, url: str, outcome: str | int) -> int:
    from ._check_cli import BadInput, NothingTested, judge, report_name
    from ._formats import format_report

    if outcome == "not run":
        return 2
    options = argparse.Namespace(**vars(args))
    options.scenario, options.time_scale, options.journal = None, None, str(journal)
    problems: list[str] = []
    if outcome == "timeout":
        problems.append(f"the command did not end within {args.timeout:g} s and was stopped")
    elif outcome != 0:
        problems.append(f"the command failed (exit status {outcome})")
    try:
        report = judge(str(journal), options, prog=PROG)
    except NothingTested:
        problems.append(
            f"the command made no request to the fake at {url}, so nothing was tested;"
            " does it read FAKEPROVIDER_URL?"
        )
        for problem in problems:
            _say(problem)
        return 1
    except BadInput as exc:
        print(exc, file=sys.stderr)
        return 2
    name = report_name(report)
    text = format_report(report, args.format, max_violations=args.max_violations, name=name)
    print(text, flush=True)
    for path, fmt in ((args.junit, "junit"), (args.report_json, "json")):
        if path is not None:
            path.write_text(format_report(report, fmt, name=name) + "\n", encoding="utf-8")
    if args.report_html is not None:
        from .htmlreport import write_html_report

        write_html_report(report, args.report_html)
    if not report.ok:
        problems.append(report.summary())
    for problem in problems:
        _say(problem)
    if problems:
        return 1
    requests = report.metrics["requests"]
    _say(f"the command succeeded and no invariant was broken ({requests} requests checked)")
    return 0
