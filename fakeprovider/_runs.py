"""A journal's runs: a run header, ``/__admin/reset`` or ``/__admin/scenario`` starts a new one.

A leaf of the checker (the report and ``check`` both split journals into runs).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .journal import Entry, order_entries

__all__ = ["runs_with_headers", "split_runs"]

_RUN_STARTS = frozenset({"/__admin/reset", "/__admin/scenario"})


def split_runs(entries: Iterable[Entry]) -> list[list[Entry]]:
    """The journal's runs, in order: a run header, reset or scenario load (admin) entry starts
    a new one (entries ordered by ``order_entries``, so processes appending to one file stay
    apart).

    Admin entries themselves belong to no run; empty runs are dropped.
    """
    return [run for _, run in runs_with_headers(entries)]


def runs_with_headers(entries: Iterable[Entry]) -> list[tuple[dict[str, Any] | None, list[Entry]]]:
    """``split_runs`` with each run's header (the ``run`` of the last run header before its
    first entry; None for a journal written before run headers existed)."""
    runs: list[tuple[dict[str, Any] | None, list[Entry]]] = [(None, [])]
    for e in order_entries(entries):
        if e.kind == "admin":
            if e.is_header or e.path in _RUN_STARTS:
                header = e.run if e.is_header else None
                if runs[-1][1]:
                    runs.append((header, []))
                elif header is not None:
                    runs[-1] = (header, [])
            continue
        runs[-1][1].append(e)
    return [(header, run) for header, run in runs if run]
