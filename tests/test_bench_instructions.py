"""``benchmarks/bench_instructions.py``'s parts: reading callgrind's totals, the arithmetic, and
the bare app answering the fake's bytes. The benchmark itself (valgrind, minutes) is run by hand."""

from __future__ import annotations

import asyncio
from types import ModuleType

import pytest

from .bench_scripts import load_script

#: The head of a callgrind output file, as valgrind 3.19 writes it.
CALLGRIND_HEAD = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  python bench_instructions.py --child status fake 300
part: 1

positions: line
events: Ir
summary: 1768617331
"""


def _script() -> ModuleType:
    return load_script("bench_instructions")


def test_callgrind_total_is_read_from_the_summary_line() -> None:
    assert _script().callgrind_total(CALLGRIND_HEAD) == 1768617331


def test_callgrind_total_reads_a_totals_line_too() -> None:
    assert _script().callgrind_total("events: Ir\ntotals: 12345\n") == 12345


def test_callgrind_output_without_a_total_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^no 'summary:' or 'totals:' line in the callgrind"):
        _script().callgrind_total("events: Ir\n")


#: A callgrind body as valgrind 3.19 writes it: names compressed to "(id)" after their first
#: use, relative positions, and a call's inclusive cost on the line after its ``calls=``.
CALLGRIND_BODY = """\
ob=(1) /usr/lib/libpython3.11.so
fl=(1) ceval.c
fn=(1) _PyEval_EvalFrameDefault
10 1000
+2 500
cob=(2) /usr/lib/x86_64-linux-gnu/libcrypto.so.3
cfn=(2) sha256_block
calls=3 0
+1 9000
ob=(2)
fn=(2)
0 7000
* 2000
-1
ob=(1)
fn=(1)
5 100
ob=(3) /usr/lib/libcrypto.so.1.1.extra
fn=(3) other
1 40
"""


def test_callgrind_object_cost_counts_an_objects_own_code_not_its_calls() -> None:
    bench = _script()
    assert bench.callgrind_object_cost(CALLGRIND_BODY, "libcrypto") == 7000 + 2000 + 40
    assert bench.callgrind_object_cost(CALLGRIND_BODY, "libpython") == 1000 + 500 + 100
    assert bench.callgrind_object_cost(CALLGRIND_BODY, "msgspec") == 0


def test_per_request_cost_cancels_what_both_runs_share() -> None:
    # 1,000,000 of start-up and warm-up in both; 250 per request
    assert _script().per_request(1_000_000 + 300 * 250, 1_000_000 + 1300 * 250, 300, 1300) == 250


def test_per_request_needs_a_longer_second_run() -> None:
    with pytest.raises(ValueError, match=r"^n2 must be larger than n1, got n1=300, n2=300$"):
        _script().per_request(1, 2, 300, 300)


def test_bare_app_answers_the_given_bytes_and_status() -> None:
    bench = _script()
    app = bench._bare_app(b'{"status": "queued"}', b'{"job_id": "j"}', 202)
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v1/jobs/j",
        "headers": [],
        "query_string": b"",
    }
    answer = load_script("_asgi").answer
    status = asyncio.run(answer(app, scope))
    submit = asyncio.run(answer(app, dict(scope, method="POST", path="/v1/jobs"), b"{}"))
    assert status == (200, b'{"status": "queued"}')
    assert submit == (202, b'{"job_id": "j"}')
