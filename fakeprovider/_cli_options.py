"""What the ``fakeprovider`` commands share: option types, the options ``serve`` and ``run``
both take, the help layout and the ``--log-requests`` printer.

Below ``cli`` and its command modules (``_check_cli``, ``_run_cli``), which all import it.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .journal import Entry


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value}")
    return value


def timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 3600, got {text!r}")
    return value


def time_scale(text: str) -> float:
    """``--time-scale F``: a number greater than 0 and at most ``MAX_TIME_SCALE`` (1000)."""
    from .scenario import MAX_TIME_SCALE

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_TIME_SCALE:
        raise argparse.ArgumentTypeError(
            f"expected a time scale greater than 0 and at most {MAX_TIME_SCALE:g}, got {text!r}"
        )
    return value


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port between 0 and 65535, got {value}")
    return value


def _stack_option(option: str, fast: str, fallback: str) -> Callable[[str], str]:
    """``--http`` / ``--loop``: the fast choice is refused when its package is missing (the
    choices themselves are argparse's to check)."""

    def parse(text: str) -> str:
        import importlib.util

        if text == fast and importlib.util.find_spec(fast) is None:
            raise argparse.ArgumentTypeError(
                f"{fast} is not installed here; install it (pip install {fast})"
                f" or use --{option} {fallback}"
            )
        return text

    return parse


class _Dialects:
    """``--dialect``'s list of dialects, made when its help is shown: the dialects are imported
    then, not by every command (``check`` needs none of them)."""

    def __str__(self) -> str:
        from .dialects import describe_dialects

        return describe_dialects()


def add_serve_options(parser: argparse.ArgumentParser, *, port: int) -> None:
    """The options ``serve`` and ``run`` share (everything but the scenario)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=port_number,
        default=port,
        help=f"port to bind, 0 for any free one (default: {port})",
    )
    dialect = parser.add_argument(
        "--dialect",
        default=None,
        metavar="NAME",
        help="wire dialect, one of: %(dialects)s (default: the scenario's, else generic)",
    )
    vars(dialect)["dialects"] = _Dialects()  # what argparse fills %(dialects)s from
    parser.add_argument(
        "--journal",
        type=Path,
        default=None,
        metavar="PATH",
        help="append every request to this JSONL file as it completes",
    )
    parser.add_argument(
        "--seed", type=int, default=None, metavar="N", help="override the scenario's seed"
    )
    parser.add_argument(
        "--time-scale",
        type=time_scale,
        default=1.0,
        metavar="F",
        help="multiply every duration in the scenario by F (0.1 runs a 93 s job in 9.3 s)",
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level; info or debug also print a line per request",
    )
    parser.add_argument(
        "--log-requests",
        action="store_true",
        help="print a line per request (and webhook delivery) to standard error as it is answered",
    )
    parser.add_argument(
        "--http",
        type=_stack_option("http", "httptools", "h11"),
        choices=["auto", "httptools", "h11"],
        default="auto",
        help="HTTP/1.1 parser: httptools (fast, a dependency where it has wheels), h11 (pure"
        " Python, the fallback), or auto: httptools when installed, else h11 (default: auto)",
    )
    parser.add_argument(
        "--loop",
        type=_stack_option("loop", "uvloop", "asyncio"),
        choices=["auto", "uvloop", "asyncio"],
        default="auto",
        help="event loop: uvloop (fast; not on Windows or PyPy), asyncio (the standard"
        " library's), or auto: uvloop when installed, else asyncio (default: auto)",
    )
    parser.add_argument(
        "--allow-webhook-host",
        action="append",
        default=[],
        metavar="HOST",
        help="let webhooks go to HOST too (by default only to loopback addresses and"
        " localhost); repeat for several hosts",
    )


def request_listener(args: argparse.Namespace) -> Callable[[Entry], None] | None:
    """The journal listener ``serve`` and ``run`` play with: request lines on standard error
    under ``--log-requests`` or ``--log-level info|debug``, else none."""
    if args.log_requests or args.log_level in ("info", "debug"):
        return request_logger()
    return None


def request_logger(stream: TextIO | None = None) -> Callable[[Entry], None]:
    """A journal listener (``FakeProvider(journal_listener=...)``) printing each entry as a line
    of the journal table to ``stream`` (standard error by default), times from the start of its
    run. The header of the first run is not printed: the ready line has just named that run."""
    from ._table import RunLines

    table = RunLines()
    seen = False

    def log(entry: Entry) -> None:
        nonlocal seen
        first, seen = not seen, True
        line = table.lines(entry)[0]  # a header's own line, or the entry's
        if first and entry.is_header:
            return
        out = stream if stream is not None else sys.stderr
        with contextlib.suppress(OSError, ValueError):
            print(line.strip() if entry.is_header else line, file=out, flush=True)

    return log


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
