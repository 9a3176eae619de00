"""The scenario format reference, generated from the model (kept in docs/scenarios.md)."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import yaml

from ._declarative import _plain_field, describe, is_model, iter_fields
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
    if value == "":
        return '`""`'
    # as a scenario file would spell it: 5s, false, [5s, 30s]
    plain = _plain_field(tp, value, keep_defaults=True)
    text = yaml.safe_dump(plain, default_flow_style=True, width=1000)
    return f"`{text.removesuffix(chr(10)).removesuffix(chr(10) + '...').strip()}`"


def reference() -> str:
    """The Markdown reference of every key, from the dataclasses' annotations and docs."""
    parts = []
    for title, cls in _SECTIONS:
        # cleandoc: a docstring's later lines are indented, and indented lines are a code block
        parts.append(f"### `{title}`\n\n{inspect.cleandoc(cls.__doc__ or '')}\n")
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
