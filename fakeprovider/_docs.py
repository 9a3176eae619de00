"""The scenario format reference, generated from the model (kept in docs/scenarios.md)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ._durations import format_duration
from ._model import DURATION, describe, is_model, iter_fields
from .scenario import (
    Auth,
    Concurrency,
    Expect,
    Fault,
    JobError,
    JobSpec,
    RateLimit,
    Result,
    RetryAfter,
    Scenario,
    Step,
    Webhooks,
)

BEGIN = "<!-- BEGIN GENERATED REFERENCE (python -m fakeprovider._docs) -->"
END = "<!-- END GENERATED REFERENCE -->"

_SECTIONS: list[tuple[str, type]] = [
    ("Scenario (top level)", Scenario),
    ("jobs[]", JobSpec),
    ("jobs[].timeline[]", Step),
    ("jobs[].result", Result),
    ("jobs[].error", JobError),
    ("faults[]", Fault),
    ("retry_after (mapping form)", RetryAfter),
    ("rate_limit", RateLimit),
    ("concurrency", Concurrency),
    ("auth", Auth),
    ("webhooks", Webhooks),
    ("expect", Expect),
]


def _default(tp: Any, value: Any) -> str:
    if value is dataclasses.MISSING:
        return "**required**"
    if value is None:
        return "none"
    if is_model(type(value)):
        return "see below"
    if isinstance(value, float) and DURATION in getattr(tp, "__metadata__", ()):
        return f"`{format_duration(value)}`"
    if isinstance(value, tuple):
        return "`[" + ", ".join(str(v) for v in value) + "]`" if value else "`[]`"
    if value == {}:
        return "`{}`"
    if value == "":
        return '`""`'
    return f"`{value}`"


def reference() -> str:
    """The Markdown reference of every key, from the dataclasses' annotations and docs."""
    parts = []
    for title, cls in _SECTIONS:
        parts.append(f"### `{title}`\n\n{(cls.__doc__ or '').strip()}\n")
        parts.append("| key | type | default | meaning |\n| --- | --- | --- | --- |")
        for name, tp, text, default in iter_fields(cls):
            kind = describe(tp).replace("|", "\\|")
            parts.append(f"| `{name}` | {kind} | {_default(tp, default)} | {text} |")
        parts.append("")
    return "\n".join(parts)


def render_into(markdown: str) -> str:
    """``markdown`` with the text between the markers replaced by the current reference."""
    head, _, rest = markdown.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n\n{reference()}\n{END}{tail}"


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "docs" / "scenarios.md"
    path.write_text(render_into(path.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"updated {path}")
