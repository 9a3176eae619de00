"""The ``fakeprovider check`` command: read a JSONL journal, print the invariant report.

Exit 0 when no invariant is broken, 1 when one is, 2 on bad input (an unreadable file, a bad
JSONL line, a bad limit or an unknown scenario).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import os
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, cast

from ._formats import FORMATS, format_report
from ._judges import Unjudgeable
from ._report import MAX_VIOLATIONS
from ._stream import StreamReport, Unordered, check_streams, in_seq_order_batches, render_streamed
from .entries import EntryLike
from .errors import ScenarioError
from .invariants import Limits, Report, check, runs_with_headers
from .journal import iter_record_batches, paused_gc, read_journal
from .limits import limits_for

if TYPE_CHECKING:
    from .htmlreport import Layout

__all__ = [
    "BadInput",
    "add_check_parser",
    "add_report_parser",
    "cmd_check",
    "judge",
    "judge_streamed",
]

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
    from ._cli_options import examples, formatter, time_scale

    parser = sub.add_parser(
        "check",
        help="check a journal against the client invariants",
        description="Judge every client in JOURNAL (a JSONL file written by 'serve --journal') "
        "against the invariants. Exit 0 when clean, 1 on violations, 2 on bad input (a journal "
        "with no client request in it is bad input: nothing was tested).",
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider check run.jsonl       # limits from the journal's run header",
            "fakeprovider check run.jsonl --scenario transient-5xx   # its expect: limits",
            "fakeprovider check run.jsonl --deadline 5m --max-retries 3 --json",
            "fakeprovider check run.jsonl --format junit > junit.xml   # one case per rule",
            "fakeprovider check run.jsonl --format github   # annotations in GitHub Actions",
            "gunzip -c run.jsonl.gz | fakeprovider check -   # stdin, streamed (a copy in TMPDIR)",
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
        type=time_scale,
        default=None,
        metavar="F",
        help="the time scale the journal was recorded at, for --scenario (default: the run"
        " header's, else 1)",
    )
    add_limit_options(parser)
    add_format_options(parser)
    parser.set_defaults(func=cmd_check)


def add_report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ._cli_options import examples, formatter, time_scale

    parser = sub.add_parser(
        "report",
        help="write a journal's HTML timeline report",
        description=(
            "Judge JOURNAL as 'check' does and write the verdict as one self-contained HTML file\n"
            "(no script, nothing fetched): each job a lane on a time axis, its status phases as\n"
            "bands, every request a mark coloured by its answer, poll hints and Retry-After\n"
            "windows shaded, webhooks as arrows, violations ringed with their sentence, and the\n"
            "metrics. Exit 0 once written (whatever the verdict), 2 on bad input."
        ),
        formatter_class=formatter,
        epilog=examples(
            "fakeprovider report run.jsonl -o report.html",
            "fakeprovider report run.jsonl -o report.html --deadline 2m   # limits as for check",
        ),
    )
    parser.add_argument("journal", metavar="JOURNAL", help="the JSONL journal file ('-' for stdin)")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="FILE",
        help="the HTML file to write",
    )
    parser.add_argument(
        "--title", default="fakeprovider report", help="the page's title (default: %(default)s)"
    )
    parser.add_argument(
        "--scenario",
        metavar="NAME",
        default=None,
        help="start from this scenario's expect: limits (default: the run header's)",
    )
    parser.add_argument(
        "--time-scale",
        type=time_scale,
        default=None,
        metavar="F",
        help="the time scale the journal was recorded at, for --scenario",
    )
    add_limit_options(parser)
    parser.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """The HTML report. A journal file is judged as it streams by (``judge_streamed``) and
    drawn from two more passes over the same bytes (``html_report``'s ``entries``), so that
    what is held grows with the violations and jobs, not with the entries (standard input or
    a pipe is judged as it is read, and copied for the passes after: ``_snapshot``); a file
    too far out of seq order to stream is read whole."""
    with contextlib.ExitStack() as stack:
        return _report(args, stack)


def _report(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    from .htmlreport import Layout, html_report

    prog = "fakeprovider report"
    layout = Layout()  # the page's first pass, noted while the journal is judged
    try:
        snapshot = _snapshot(args.journal, prog, stack)
        # (judged as ``check --format json`` is: every violation kept, no timelines noted)
        streamed = argparse.Namespace(**{**vars(args), "format": "json", "ends_process": False})
        found = None
        if snapshot is not None:
            noted = dataclasses.replace(snapshot, note=layout.note)
            found = judge_streamed(noted, streamed, prog=prog)
        if found is None:
            report, page = judge(args.journal, args, prog=prog, snapshot=snapshot), None
        else:
            assert snapshot is not None  # streamed from a regular file
            report = found.as_report()
            page = _drawn(report, snapshot, args.title, prog, layout)
    except BadInput as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        Path(args.output).write_text(
            html_report(report, title=args.title) if page is None else page, encoding="utf-8"
        )
    except OSError as exc:
        print(f"{prog}: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{prog}: wrote {args.output} ({report.summary()})", file=sys.stderr)
    return 0


def _drawn(report: Report, journal: _Snapshot, title: str, prog: str, layout: Layout) -> str:
    """``html_report`` of a streamed ``report``, drawn from the ``layout`` noted while it was
    judged and one more pass over the journal's bytes (``_again``)."""
    from .htmlreport import html_report

    return _again(
        journal,
        prog,
        lambda: html_report(report, title=title, entries=journal.entries, layout=layout),
    )


def _again(journal: _Snapshot, prog: str, make: Callable[[], str]) -> str:
    """What ``make`` makes from another pass over ``journal``'s bytes. Raises ``BadInput``
    when the file was replaced, truncated or rewritten since the first: its entries may then
    be others, out of order, or not there (what that pass meets instead: ``Unordered``,
    ``ValueError``, a lookup that fails, ``OSError``)."""
    changed = BadInput(
        f"{prog}: {journal.called} changed while it was being checked (replaced,"
        " truncated or rewritten); check a copy of it"
    )
    if not journal.unchanged():
        raise changed
    try:
        with paused_gc():
            made = make()
    except (Unordered, ValueError, KeyError, IndexError, OSError):
        raise changed from None
    if not journal.unchanged():
        raise changed
    return made


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """The options that set limits (``--max-retries``, ``--deadline``...)."""
    group = parser.add_argument_group("limits (default: the run header's, else the defaults)")
    for option, (dest, metavar, text) in _OPTIONS.items():
        group.add_argument(option, dest=f"limit_{dest}", metavar=metavar, default=None, help=text)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def add_format_options(parser: argparse.ArgumentParser) -> None:
    """``--format``, its alias ``--json``, and ``--max-violations``."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (for people), json, junit (JUnit XML for CI dashboards) or github (workflow"
        " command annotations); default text",
    )
    parser.add_argument(
        "--json",
        dest="format",
        action="store_const",
        const="json",
        help="the same as --format json",
    )
    parser.add_argument(
        "--max-violations",
        type=_count,
        default=MAX_VIOLATIONS,
        metavar="N",
        help=f"detail at most N violations in text and github output; the count per rule covers"
        f" all (default {MAX_VIOLATIONS}, 0: all)",
    )


class BadInput(Exception):
    """What ``judge`` could not judge, as the one line to print (exit 2)."""


class NothingTested(BadInput):
    """The journal holds no client request."""


def judge(
    journal: str,
    args: argparse.Namespace,
    prog: str = "fakeprovider check",
    snapshot: _Snapshot | None = None,
) -> Report:
    """Read ``journal`` and judge it with the limits ``args`` ask for (see ``_run_limits``);
    from ``snapshot``'s file when given (``_snapshot``'s: for ``-``, standard input's copy).

    Raises ``BadInput`` with the line to print for an unreadable file, a bad entry, bad limits
    or a journal with no client request in it (nothing was tested).
    """
    try:
        if snapshot is not None:
            if snapshot.tee is not None:
                snapshot.tee.rest()
            entries = read_journal(snapshot.path, name=snapshot.name)
        else:
            source = getattr(sys.stdin, "buffer", sys.stdin) if journal == "-" else journal
            entries = read_journal(source)
    except OSError as exc:
        raise BadInput(f"{prog}: cannot read {journal}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{prog}: {exc}") from None
    try:
        run_limits = _run_limits(args, [header for header, _ in runs_with_headers(entries)])
    except ScenarioError as exc:
        raise BadInput(str(exc)) from None
    except ValueError as exc:
        raise BadInput(f"{prog}: {exc}") from None
    if not any(entry.kind not in ("admin", "webhook") for entry in entries):
        raise NothingTested(
            f"{prog}: {journal} holds no client request, so nothing was tested;"
            " did the client reach the fake?"
        )
    return check(entries, run_limits[0] if run_limits else None, run_limits=run_limits)


def report_name(report: Report) -> str:
    """A name for the report's suite and annotations: ``fakeprovider`` and the scenario(s)."""
    from .invariants import runs_with_headers

    return _name([header for header, _ in runs_with_headers(report.entries)])


def _name(headers: Iterable[dict[str, Any] | None]) -> str:
    names = []
    for header in headers:
        name = header.get("scenario") if header is not None else None
        if isinstance(name, str) and name not in names:
            names.append(name)
    return f"fakeprovider {', '.join(names)}" if names else "fakeprovider"


@dataclasses.dataclass(frozen=True)
class _Snapshot:
    """A regular file as it was when the check began: which file, and how many bytes it held.
    Every pass reads those bytes only, so that a journal a server is still appending to is
    judged and shown as one and the same prefix."""

    path: str
    device: int
    inode: int
    size: int
    #: What each pass's entries go through on their way (``Layout.note``), if anything.
    note: Callable[[Iterable[EntryLike]], Iterable[EntryLike]] | None = None
    #: What messages call the journal, and a bad line's error (None: its path): ``-`` and
    #: ``<stdin>`` for standard input, the path given for a pipe (``_snapshot``).
    label: str | None = None
    name: str | None = None
    #: The input read once through it into the file at ``path`` (``_snapshot``), if any.
    tee: _Tee | None = None

    @property
    def called(self) -> str:
        return self.path if self.label is None else self.label

    @classmethod
    def of(cls, path: str) -> _Snapshot | None:
        """None for what cannot be read twice (a pipe, ``/dev/stdin``, a FIFO: ``_snapshot``
        reads it through a ``_Tee``) or not stat'ed (``judge`` says why it cannot be read)."""
        try:
            found = os.stat(path)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(found.st_mode):
            return None
        return cls(path, found.st_dev, found.st_ino, found.st_size)

    def entries(self) -> Iterable[EntryLike]:
        """The entries in the snapshot's bytes in ``order_entries``'s order (``in_seq_order``),
        as records (``iter_records``), read and put in order a block of the file at a time.
        Raises ``Unordered`` where ``in_seq_order`` does."""
        entries = itertools.chain.from_iterable(self.batches())
        return entries if self.note is None else self.note(entries)

    def batches(self) -> Iterable[list[EntryLike]]:
        """``entries`` in the lists they are read and put in order in."""
        tee = self.tee
        if tee is None:
            return in_seq_order_batches(
                iter_record_batches(self.path, limit=self.size, name=self.name)
            )
        if not tee.begun:  # the first pass: judged as it is read, and copied
            tee.begun = True
            stream = cast(IO[bytes], tee)  # (what it reads of a binary stream: read, read1)
            return in_seq_order_batches(iter_record_batches(stream, name=self.name))
        tee.rest()
        return in_seq_order_batches(iter_record_batches(self.path, limit=tee.size, name=self.name))

    def unchanged(self) -> bool:
        """Whether the file at ``path`` is still this one, holding at least these bytes (a
        ``_Tee``'s copy is this command's own: nothing else writes it)."""
        if self.tee is not None:
            return True
        try:
            found = os.stat(self.path)
        except OSError:
            return False
        return (found.st_dev, found.st_ino) == (self.device, self.inode) and (
            found.st_size >= self.size
        )


#: How many bytes ``_Tee.rest`` reads at a time.
_COPY_BLOCK = 1 << 20


def _copy_refused(prog: str, what: str, exc: OSError) -> BadInput:
    return BadInput(
        f"{prog}: cannot copy {what} to a temporary file, to judge it in bounded memory:"
        f" {exc.strerror or exc}; set TMPDIR to a folder with room, or give a regular file's path"
    )


class _Tee:
    """A journal that cannot be read twice (standard input, a pipe), read once: each block the
    first pass reads is written to ``copy`` (a temporary file) on its way, so that
    the first pass judges as it reads (a bad line is told at once, as when it was read whole)
    and the passes after it read the copy. A binary stream to ``iter_record_batches``."""

    def __init__(self, source: IO[bytes], copy: IO[bytes], what: str, prog: str):
        self.source = source
        self.copy = copy
        self.what = what
        self.prog = prog
        #: Bytes copied; whether the source has ended (the copy then holds it all, closed).
        self.size = 0
        self.ended = False
        #: Whether the first pass has begun (it reads through the tee, the others the copy).
        self.begun = False

    def read(self, size: int = -1) -> bytes:
        """At most ``size`` bytes more of the source (what it has at once), copied."""
        if self.ended:
            return b""
        read = getattr(self.source, "read1", None) or self.source.read
        block: bytes = read(size)  # an OSError goes to the pass: "cannot read ..."
        if not block:
            if size != 0:
                self._end()
            return b""
        try:
            self.copy.write(block)
        except OSError as exc:
            raise _copy_refused(self.prog, self.what, exc) from None
        self.size += len(block)
        return block

    read1 = read

    def rest(self) -> None:
        """Copy what the first pass left unread (it stopped early, or never began)."""
        while not self.ended:
            self.read(_COPY_BLOCK)

    def _end(self) -> None:
        try:
            self.copy.close()
        except OSError as exc:
            raise _copy_refused(self.prog, self.what, exc) from None
        self.ended = True


def _snapshot(journal: str, prog: str, stack: contextlib.ExitStack) -> _Snapshot | None:
    """What ``journal`` is streamed from: the regular file it names (or that standard input
    is, for ``-``, nothing of it read yet, by the name the system gives it:
    ``/proc/self/fd/N``), else, for what cannot be read twice (standard input, a pipe, a
    FIFO), that input read once through a ``_Tee`` into a temporary file (``TMPDIR``'s),
    removed when ``stack`` closes (also when SIGTERM or SIGHUP ends the command:
    ``_removed_on_signals``). So a journal piped in is judged in bounded memory, as a file is,
    and called as before (``-``, ``<stdin>`` for its lines, else the path given). None for
    what ``judge`` reads whole: what cannot be opened (it says why), a standard input of text
    alone. Raises ``BadInput`` for a closed standard input, or when no temporary file can be
    made."""
    if journal == "-":
        if sys.stdin is None:
            raise BadInput(f"{prog}: cannot read -: standard input is closed")
        source: IO[bytes] | None = getattr(sys.stdin, "buffer", None)
        if source is None:  # a text stream put in its place (no bytes to copy): read whole
            return None
        label, name, what = "-", "<stdin>", "standard input"
        found = _unread_file(source)
        if found is not None:
            return dataclasses.replace(found, label=label, name=name)
    else:
        found = _Snapshot.of(journal)
        if found is not None:
            return found
        try:
            source = stack.enter_context(open(journal, "rb"))  # noqa: SIM115 - closed by stack
        except (OSError, ValueError):  # not there, a folder...: ``judge`` says why
            return None
        label = name = what = journal
    try:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="fakeprovider-"))
        path = os.path.join(folder, "journal.jsonl")
        copy = stack.enter_context(open(path, "wb"))  # noqa: SIM115 - closed by stack
    except OSError as exc:
        raise _copy_refused(prog, what, exc) from None
    _removed_on_signals(stack)
    made = _Snapshot.of(path)
    if made is None:  # pragma: no cover - the file was just made
        raise BadInput(f"{prog}: cannot read the copy of {what} at {path}")
    return dataclasses.replace(made, label=label, name=name, tee=_Tee(source, copy, what, prog))


def _unread_file(source: IO[bytes]) -> _Snapshot | None:
    """The regular file ``source`` reads, while nothing of it is read yet, by a name that
    opens it afresh where the system gives one (``/proc/self/fd/N``); else None."""
    try:
        fd = source.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.lseek(fd, 0, os.SEEK_CUR) != 0:
            return None
    except (OSError, ValueError):  # no descriptor (io.UnsupportedOperation is both)
        return None
    return _Snapshot.of(f"/proc/self/fd/{fd}")


def _removed_on_signals(stack: contextlib.ExitStack) -> None:
    """Until ``stack`` closes, SIGTERM and SIGHUP end the command by ``SystemExit`` (exit
    128 + the signal's number), which closes ``stack`` on its way: its temporary file is not
    left behind (SIGINT does that already, by ``KeyboardInterrupt``). Only in the main thread,
    where Python runs signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        return
    caught = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]

    def end(number: int, frame: FrameType | None) -> None:
        for each in caught:  # a second signal (``timeout`` sends two) must not cut the cleanup
            signal.signal(each, signal.SIG_IGN)
        raise SystemExit(128 + number)

    before = {each: signal.signal(each, end) for each in caught}

    def restore() -> None:
        for each, handler in before.items():
            signal.signal(each, handler)

    stack.callback(restore)


def judge_streamed(
    journal: _Snapshot,
    args: argparse.Namespace,
    shown: int | None = None,
    prog: str = "fakeprovider check",
) -> StreamReport | None:
    """``judge`` for a journal file, judged as it is read (``_stream``): what is kept does not
    grow with its entries. None when the file is too far out of seq order for that (``judge``
    then reads it whole). Raises ``BadInput`` as ``judge`` does, for the same journals.
    ``shown``: keep only the first that many violations (``check_stream``'s ``shown``)."""
    timelines = args.format == "text"  # what the text report's timelines pass needs noted
    hold = bool(getattr(args, "ends_process", False))  # see ``_check``
    scenarios: dict[float, Limits] = {}
    errors: list[Exception] = []
    given = _given(args)

    def limits_of(header: dict[str, Any] | None) -> Limits:
        try:
            return _limits_of(args, header, given, scenarios)
        except (ScenarioError, ValueError) as exc:
            errors.append(exc)
            return Limits()

    try:
        with paused_gc():
            found = check_streams(
                journal.entries, limits_of, shown=shown, timelines=timelines, hold=hold
            )
    except Unjudgeable:
        return None
    except OSError as exc:
        raise BadInput(f"{prog}: cannot read {journal.called}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"{prog}: {exc}") from None
    _warn_headerless(args, list(found.headers))
    if errors:
        if isinstance(errors[0], ScenarioError):
            raise BadInput(str(errors[0]))
        raise BadInput(f"{prog}: {errors[0]}")
    if not found.tested:
        raise NothingTested(
            f"{prog}: {journal.called} holds no client request, so nothing was tested;"
            " did the client reach the fake?"
        )
    return found


def cmd_check(args: argparse.Namespace) -> int:
    # the collector held from the reading to the end: what is judged and printed is let go
    # (by reference counting) before it resumes, so it never walks the report's counts
    with paused_gc():
        return _check(args)


def _check(args: argparse.Namespace) -> int:
    """The check; with ``args.ends_process`` (``cli.main`` run as the program), the process
    ends here once the report is out (``_exit``): what was judged is never freed, judge by
    judge (``check_stream``'s ``hold``), only let go with the process."""
    with contextlib.ExitStack() as stack:  # standard input's copy, if any (``_snapshot``)
        return _checked(args, stack)


def _checked(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    try:
        snapshot = _snapshot(args.journal, "fakeprovider check", stack)
        # the text report details the first --max-violations and counts the rest
        shown = args.max_violations if args.format == "text" and args.max_violations else None
        found = None if snapshot is None else judge_streamed(snapshot, args, shown)
        report = judge(args.journal, args, snapshot=snapshot) if found is None else None
    except BadInput as exc:
        print(exc, file=sys.stderr)
        return 2
    if found is not None:
        assert snapshot is not None  # streamed from a regular file
        if args.format != "text" or sum(len(v.seqs) for v in found.violations) > _HOLD_PAST:
            _let_go(found)
        if args.format == "text":
            try:
                text = _render_streamed(found, snapshot, args.max_violations)
            except BadInput as exc:
                print(exc, file=sys.stderr)
                return 2
        else:
            text = format_report(
                found.as_report(),
                args.format,
                max_violations=args.max_violations,
                name=_name(found.headers),
            )
        print(text)
        return _exit(args, 0 if not found.total else 1, stack)
    assert report is not None  # judged in memory
    print(
        format_report(
            report, args.format, max_violations=args.max_violations, name=report_name(report)
        )
    )
    return _exit(args, 0 if report.ok else 1, stack)


#: How many seqs the violations a text report shows may name for the judges to be held while
#: it is drawn: each costs the drawing some 40 bytes (its timeline keeps a few dozen entries).
_HOLD_PAST = 1 << 20


def _let_go(found: StreamReport) -> None:
    """Free the runs ``found`` holds (``check_stream``'s ``hold``) before the report is made,
    for it to use their memory: what a report other than text makes grows with the violations
    and clients, as do the timelines of violations that name many seqs."""
    for run in found.held:
        run.release()


def _exit(args: argparse.Namespace, code: int, stack: contextlib.ExitStack) -> int:
    """``code``; with ``args.ends_process``, the process ends with it instead, once standard
    output and error are flushed (a flush's ``BrokenPipeError`` goes to ``cli.main`` as a
    print's would) and ``stack`` is closed (standard input's copy removed), without freeing
    what it holds nor running ``atexit`` (the check opens no journal sink, the one thing those
    flush). Not while coverage measures the process: its data is saved at exit, by
    ``atexit``."""
    if getattr(args, "ends_process", False) and not _measured():
        sys.stdout.flush()
        sys.stderr.flush()
        stack.close()
        os._exit(code)
    return code


def _measured() -> bool:
    """Whether coverage.py is measuring this process (``coverage run``, or a subprocess it
    was told to follow)."""
    coverage = sys.modules.get("coverage")
    current = getattr(getattr(coverage, "Coverage", None), "current", None)
    return current is not None and current() is not None


def _render_streamed(found: StreamReport, journal: _Snapshot, max_violations: int | None) -> str:
    """The text report; its timelines come from a second pass over the same bytes (``_again``)."""
    return _again(
        journal,
        "fakeprovider check",
        lambda: render_streamed(found, journal.entries, max_violations, batches=journal.batches),
    )


def _run_limits(args: argparse.Namespace, headers: list[dict[str, Any] | None]) -> list[Limits]:
    """Each run's limits: ``--scenario``'s ``expect:`` (at ``--time-scale``, else the run
    header's time scale), else the limits in the run header, else the defaults; the limit
    options on top. Raises ``ScenarioError`` or ``ValueError`` (bad option or header)."""
    given = _given(args)
    _warn_headerless(args, headers)
    scenarios: dict[float, Limits] = {}
    return [_limits_of(args, header, given, scenarios) for header in headers or [None]]


def _given(args: argparse.Namespace) -> dict[str, Any]:
    return {
        dest: getattr(args, f"limit_{dest}")
        for dest, _, _ in _OPTIONS.values()
        if getattr(args, f"limit_{dest}") is not None
    }


def _warn_headerless(args: argparse.Namespace, headers: list[dict[str, Any] | None]) -> None:
    if args.scenario is not None and args.time_scale is None and None in headers:
        print(
            f"fakeprovider check: warning: {args.journal} has no run header (it was written by"
            f" an older fakeprovider), so {args.scenario!r} is taken at time scale 1; pass"
            " --time-scale F if it was served at another",
            file=sys.stderr,
        )


def _limits_of(
    args: argparse.Namespace,
    header: dict[str, Any] | None,
    given: dict[str, Any],
    scenarios: dict[float, Limits],
) -> Limits:
    """One run's limits (see ``_run_limits``); ``scenarios`` caches the scenario's limits per
    time scale."""
    if args.scenario is not None:
        scale = args.time_scale
        if scale is None:
            scale = float(header.get("time_scale", 1.0)) if header is not None else 1.0
        if scale not in scenarios:
            from .scenario import load_scenario

            scenario = load_scenario(args.scenario, time_scale=scale)
            scenarios[scale] = limits_for(scenario.expect, time_scale=scale)
        base = scenarios[scale]
    elif header is not None and isinstance(header.get("limits"), dict):
        known = {f.name for f in dataclasses.fields(Limits)}
        values = {k: v for k, v in header["limits"].items() if k in known}
        try:
            base = Limits(**values)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the run header of {args.journal} holds bad limits: {exc}") from None
    else:
        base = Limits()
    return limits_for(base=base, overrides=given)
