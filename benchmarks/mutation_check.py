"""A small mutation check of the invariants: does the suite notice when a rule is wrong?

Each mutation below changes one detail of a rule (an edge made inclusive, a branch skipped, a
scope widened). The script copies the repository into a temporary directory (the working tree
is never touched), applies one mutation at a time to the copy, runs the tests that should catch
it, and reports which mutations were killed (a test failed) and which survived (every test
passed: a corner of the rule no test pins down).

    python benchmarks/mutation_check.py            # every mutation, report and score
    python benchmarks/mutation_check.py --list     # the mutations, nothing run
    python benchmarks/mutation_check.py --only status_rate-window-edge

Exit status: 0 when every mutation was killed, 1 when one survived, 2 when the unmutated tests
fail or a mutation no longer applies (its text is not found exactly once: the rule changed, so
update the mutation). Each test run is bounded (``--timeout``, default 300 s).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = "fakeprovider/_rules.py"
LIMITS = "fakeprovider/limits.py"
RUNS = "fakeprovider/_runs.py"
#: The tests that judge the rules on hand-built journals and on real clients.
TESTS = ("tests/test_invariants.py", "tests/test_rogues.py")
#: What the copy needs to run the tests.
COPIED = ("fakeprovider", "pytest_plugin", "tests", "scenarios", "pyproject.toml")


@dataclass(frozen=True)
class Mutation:
    """Replace ``old`` (which must occur exactly once in ``path``) by ``new``."""

    name: str
    path: str
    old: str
    new: str
    why: str


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "no_overlap-ambiguous-window",
        RULES,
        "starts.push(_headers_at(read) - EPSILON)",
        "starts.push(_seen_at(read) - EPSILON)",
        "a read received between the previous read's response start and end counts as overlap",
    ),
    Mutation(
        "single_retrieval-off-by-one",
        RULES,
        "if len(fetched) > allowed:",
        "if len(fetched) >= allowed:",
        "the one allowed download is flagged",
    ),
    Mutation(
        "no_premature_retrieval-ignores-webhooks",
        RULES,
        "if success_seen <= e.received_at + EPSILON or told_at <= e.received_at:",
        "if success_seen <= e.received_at + EPSILON:",
        "a download after a genuine job.succeeded webhook is premature",
    ),
    Mutation(
        "bounded_retries-off-by-one",
        RULES,
        "if len(failures) > limits.max_retries:",
        "if len(failures) >= limits.max_retries:",
        "the last allowed retry is flagged",
    ),
    Mutation(
        "bounded_retries-4xx-not-counted",
        RULES,
        "return entry.failed or (code is not None and 400 <= code < 500 and code not in (401, 403))",
        "return entry.failed",
        "a rejected request (422) retried forever is not counted",
    ),
    Mutation(
        "honours_retry_after-credential-scope",
        RULES,
        'if kind == "account":\n        return (kind, e.credential)',
        'if kind == "account":\n        return (kind,)',
        "a 429 for one credential binds requests with another",
    ),
    Mutation(
        "honours_retry_after-no-date-slack",
        RULES,
        "slack = limits.date_slack if record.form in _DATE_FORMS else EPSILON",
        "slack = EPSILON",
        "an HTTP-date Retry-After gets no second of slack",
    ),
    Mutation(
        "honours_retry_after-429-binds-job-only",
        RULES,
        'return "account" if status_code == 429 else "job"',
        'return "job"',
        "a 429 binds only its own job, not the account",
    ),
    Mutation(
        "honours_retry_after-too-many-jobs-binds-all",
        RULES,
        '        return "submits"\n',
        '        return "account"\n',
        "a too_many_active_jobs 429 also binds reads of running jobs",
    ),
    Mutation(
        "honours_retry_after-binds-concurrent-requests",
        RULES,
        "at = finder.first(position[index], _headers_at(source))",
        "at = finder.first(position[index], -math.inf)",
        "a request sent before the 429 arrived is bound by it",
    ),
    Mutation(
        "honours_poll_after-no-tolerance",
        RULES,
        "needed = previous.poll_after * (1 - limits.poll_tolerance)",
        "needed = previous.poll_after",
        "a poll 5% early is flagged despite the 10% tolerance",
    ),
    Mutation(
        "honours_poll_after-webhook-not-a-prompt",
        RULES,
        "if gap < needed - EPSILON and not prompted:",
        "if gap < needed - EPSILON:",
        "a read confirming a genuine webhook is flagged as an early poll",
    ),
    Mutation(
        "stops_at_terminal-ambiguous-window",
        RULES,
        'if e.kind == "status" and e.seq > first.seq and e.received_at >= _seen_at(first):',
        'if e.kind == "status" and e.seq > first.seq:',
        "a read sent before the terminal answer arrived is flagged",
    ),
    Mutation(
        "no_resubmission-new-key-allowed",
        RULES,
        "if s.idempotency_key != failed.idempotency_key:",
        "if False:",
        "a failed submit retried under a new Idempotency-Key is not flagged",
    ),
    Mutation(
        "no_retry_on_auth_error-in-flight-counted",
        RULES,
        "at = finder.first(p, _headers_at(entries[group[p]]))",
        "at = finder.first(p, -math.inf)",
        "a request in flight when the 401 arrived counts as a retry",
    ),
    Mutation(
        "no_retry_on_auth_error-any-credential",
        RULES,
        "group = members.setdefault(e.credential, [])",
        "group = members.setdefault(None, [])",
        "a request with new credentials after a 401 counts as a retry",
    ),
    Mutation(
        "deadline-no-slack",
        RULES,
        "limit = start.received_at + limits.deadline + limits.deadline_slack",
        "limit = start.received_at + limits.deadline",
        "a request already on its way at the deadline is flagged",
    ),
    Mutation(
        "status_rate-window-edge",
        RULES,
        "while older <= index and times[older] <= start:",
        "while older <= index and times[older] < start:",
        "a read exactly one window earlier still counts",
    ),
    Mutation(
        "status_rate-budget-plus-one",
        RULES,
        "allowed = max(1, math.floor(limits.status_rate * window + EPSILON))",
        "allowed = max(1, math.floor(limits.status_rate * window + EPSILON)) + 1",
        "one read more than the budget is allowed",
    ),
    Mutation(
        "webhook_ack-no-latency-limit",
        RULES,
        "slow = latency is not None and latency > limits.ack_limit + EPSILON",
        "slow = False",
        "a 2xx after the ack limit counts as acknowledged",
    ),
    Mutation(
        "webhook_ack-forgery-accepted-with-2xx",
        RULES,
        "if code is not None and 400 <= code < 500:",
        "if code is not None and code < 500:",
        "a forged delivery answered 200 counts as rejected",
    ),
    Mutation(
        "limits-status-rate-not-scaled",
        LIMITS,
        "status_rate=None if rate is None else rate / time_scale,",
        "status_rate=rate,",
        "a time-scaled scenario keeps the unscaled status-rate budget",
    ),
    Mutation(
        "runs-not-split-at-reset",
        RUNS,
        "if e.is_header or e.path in _RUN_STARTS:",
        "if False:",
        "a reset does not start a new run (job ids repeat across runs)",
    ),
)


def apply(source: str, mutation: Mutation) -> str:
    """``source`` with ``mutation`` applied; ValueError when its text is not there exactly once."""
    found = source.count(mutation.old)
    if found != 1:
        raise ValueError(
            f"mutation {mutation.name}: expected its text once in {mutation.path}, found it"
            f" {found} times; the rule changed, so update the mutation in {Path(__file__).name}"
        )
    return source.replace(mutation.old, mutation.new)


def _copy(into: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=ignore)
        else:
            shutil.copy2(source, into / name)


def _run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> tuple[bool, float]:
    """Run ``tests`` against the copy; (passed, seconds)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(copy), str(copy / "pytest_plugin")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command,
            cwd=copy,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - started  # a hang is noticed too
    return done.returncode == 0, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--only", action="append", metavar="NAME", help="run this mutation only")
    parser.add_argument(
        "--tests", nargs="+", default=list(TESTS), help=f"tests to run (default: {' '.join(TESTS)})"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per test run")
    args = parser.parse_args(argv)

    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    unknown = set(args.only or ()) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutation(s): {', '.join(sorted(unknown))}")
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.why}")
        return 0
    originals = {path: (ROOT / path).read_text() for path in {m.path for m in chosen}}
    try:
        mutated = [(m, apply(originals[m.path], m)) for m in chosen]
    except ValueError as problem:
        print(problem, file=sys.stderr)
        return 2
    tests = tuple(args.tests)
    with tempfile.TemporaryDirectory(prefix="fp-mutation-") as tmp:
        copy = Path(tmp)
        _copy(copy)
        passed, took = _run_tests(copy, tests, args.timeout)
        if not passed:
            print(f"the unmutated tests fail ({took:.1f} s): fix them first", file=sys.stderr)
            return 2
        print(f"unmutated: {' '.join(tests)} pass in {took:.1f} s")
        survived: list[Mutation] = []
        for mutation, text in mutated:
            target = copy / mutation.path
            target.write_text(text)
            try:
                passed, took = _run_tests(copy, tests, args.timeout)
            finally:
                target.write_text(originals[mutation.path])
            verdict = "SURVIVED" if passed else "killed"
            print(f"{verdict:8}  {mutation.name} ({took:.1f} s): {mutation.why}")
            if passed:
                survived.append(mutation)
    killed = len(mutated) - len(survived)
    print(f"score: {killed}/{len(mutated)} mutations killed ({killed / len(mutated):.0%})")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
