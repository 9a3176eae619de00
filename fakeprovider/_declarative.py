"""A small declarative model: frozen dataclasses in, validated objects and a JSON Schema out.

The scenario format is described once, as dataclasses with documented fields. This module
turns plain YAML values into those dataclasses (collecting every problem with the path where it
was found) and derives the JSON Schema from the same classes, so the two never drift apart.

Supported annotations: ``bool``, ``int``, ``float``, ``str``, ``Any`` (any JSON value),
``Literal[...]``, ``X | None``, unions of the above, ``tuple[X, ...]``, ``dict[str, X]``,
nested model dataclasses, and ``Annotated[T, Bounds(...)]`` / ``Duration``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from ._suggest import did_you_mean
from .durations import (
    DURATION_PATTERN,
    MAX_DURATION,
    MAX_DURATION_TEXT,
    format_duration,
    parse_duration,
)

Path = tuple[str | int, ...]

#: The largest size of any number in a scenario (an integer or a float): finite, and far from
#: where arithmetic on it overflows.
MAX_NUMBER = 10**15


@dataclass(frozen=True)
class Bounds:
    """Inclusive numeric bounds for an ``Annotated`` int or float."""

    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None

    def describe(self) -> str:
        parts = []
        if self.exclusive_minimum is not None:
            parts.append(f"greater than {_num(self.exclusive_minimum)}")
        if self.minimum is not None and self.maximum is not None:
            return f"between {_num(self.minimum)} and {_num(self.maximum)}"
        if self.minimum is not None:
            parts.append(f"at least {_num(self.minimum)}")
        if self.maximum is not None:
            parts.append(f"at most {_num(self.maximum)}")
        return " and ".join(parts)

    def holds(self, value: float) -> bool:
        return not (
            (self.minimum is not None and value < self.minimum)
            or (self.maximum is not None and value > self.maximum)
            or (self.exclusive_minimum is not None and value <= self.exclusive_minimum)
        )


class _DurationMarker:
    pass


DURATION = _DurationMarker()
#: Seconds, written in a scenario as ``250ms``, ``7s``, ``2m`` (or a bare number of seconds).
Duration = Annotated[float, DURATION]
NonNegativeInt = Annotated[int, Bounds(minimum=0)]
PositiveInt = Annotated[int, Bounds(minimum=1)]


def doc(
    text: str,
    default: Any = dataclasses.MISSING,
    *,
    field_default: Any = dataclasses.MISSING,
    scaled: bool = True,
) -> Any:
    """A dataclass field with the documentation the schema and the docs show.

    ``default`` is an immutable default; ``field_default`` a factory (``dict``, a model class).
    ``scaled=False`` marks a duration that ``--time-scale`` leaves alone (it measures the
    client's side, which a time scale does not speed up).
    """
    metadata = {"doc": text, "scaled": scaled}
    if field_default is not dataclasses.MISSING:
        return dataclasses.field(default_factory=field_default, metadata=metadata)
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def format_path(path: Path) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _show_number(value: Any) -> str:
    """``value`` for a message, a number of hundreds of digits cut short."""
    text = value if isinstance(value, str) else repr(value)
    return (
        repr(text)
        if isinstance(value, str) and len(text) <= 40
        else (text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)")
    )


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return _type_name(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Invalid:
    pass


INVALID: Any = _Invalid()
Issue = tuple[Path, str]
#: The models around a value, outermost first, each with its path (for "belongs one level up").
Parents = tuple[tuple[type, Path], ...]


def _hints(cls: type) -> dict[str, Any]:
    """``cls``'s field types, worked out once per class: ``get_type_hints`` evaluates every
    annotation's text again at each call (some 600 us for a scenario's models, each time one
    is read or written out)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls, include_extras=True)
    return hints


#: ``_hints`` of each model class met so far.
_HINTS: dict[type, dict[str, Any]] = {}


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _split_annotated(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    if get_origin(tp) is Annotated:
        base, *extras = get_args(tp)
        return base, tuple(extras)
    return tp, ()


def _union_members(tp: Any) -> tuple[Any, ...] | None:
    if get_origin(tp) in (Union, types.UnionType):
        return get_args(tp)
    return None


def describe(tp: Any) -> str:
    """What a value of ``tp`` looks like, in words, for "expected ..." messages."""
    base, extras = _split_annotated(tp)
    if DURATION in extras:
        return "a duration such as '250ms', '7s' or '2m'"
    bounds = next((e for e in extras if isinstance(e, Bounds)), None)
    members = _union_members(base)
    if members is not None:
        words = [describe(m) for m in members if m is not type(None)]
        text = " or ".join(dict.fromkeys(words))
        return text + (" or null" if type(None) in members else "")
    if get_origin(base) is Literal:
        return "one of " + ", ".join(repr(v) for v in get_args(base))
    if base is bool:
        return "true or false"
    if base is int:
        return "an integer" + (f" {bounds.describe()}" if bounds else "")
    if base is float:
        return "a number" + (f" {bounds.describe()}" if bounds else "")
    if base is str:
        return "a string"
    if base is Any:
        return "any value"
    if get_origin(base) is tuple:
        return f"a list of {_plural(describe(get_args(base)[0]))}"
    if get_origin(base) is dict:
        return "a mapping"
    if is_model(base):
        return "a mapping"
    raise TypeError(f"unsupported annotation {tp!r}")


def _plural(text: str) -> str:
    for article in ("a ", "an "):
        if text.startswith(article):
            noun = text[len(article) :]
            first, _, rest = noun.partition(" ")
            return f"{first}s {rest}".strip() if not first.endswith("s") else noun
    return text


def convert(tp: Any, value: Any, path: Path, issues: list[Issue], *, parents: Parents = ()) -> Any:
    """``value`` converted to ``tp``, or ``INVALID`` with the problems appended to ``issues``.

    ``parents`` are the models that contain the value (outermost first), so that a key written
    one level too deep can be told where it belongs.
    """
    base, extras = _split_annotated(tp)
    if DURATION in extras:
        return _convert_duration(value, path, issues)
    members = _union_members(base)
    if members is not None:
        return _convert_union(tp, members, value, path, issues, parents)
    if get_origin(base) is Literal:
        allowed = get_args(base)
        if value in allowed and not isinstance(value, bool):
            return value
        hint = did_you_mean(value, allowed)
        issues.append((path, f"expected {describe(base)}, got {_show(value)}{hint}"))
        return INVALID
    if base is bool:
        if isinstance(value, bool):
            return value
        issues.append((path, f"expected true or false, got {_show(value)}"))
        return INVALID
    if base in (int, float):
        ok = isinstance(value, int) if base is int else isinstance(value, (int, float))
        if (
            isinstance(value, bool)
            or not ok
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            issues.append((path, f"expected {describe(tp)}, got {_show(value)}"))
            return INVALID
        bounds = next((e for e in extras if isinstance(e, Bounds)), None)
        if bounds and not bounds.holds(value):
            issues.append((path, f"expected {describe(tp)}, got {_show(value)}"))
            return INVALID
        if abs(value) > MAX_NUMBER:
            issues.append(
                (path, f"a number here must be at most 10^15 in size, got {_show_number(value)}")
            )
            return INVALID
        return float(value) if base is float else value
    if base is str:
        if isinstance(value, str):
            return value
        issues.append((path, f"expected a string, got {_show(value)}"))
        return INVALID
    if base is Any:
        return value
    if get_origin(base) is tuple:
        if not isinstance(value, list):
            issues.append((path, f"expected {describe(base)}, got {_show(value)}"))
            return INVALID
        item_tp = get_args(base)[0]
        items = [
            convert(item_tp, item, (*path, i), issues, parents=parents)
            for i, item in enumerate(value)
        ]
        return INVALID if any(i is INVALID for i in items) else tuple(items)
    if get_origin(base) is dict:
        if not isinstance(value, dict):
            issues.append((path, f"expected a mapping, got {_show(value)}"))
            return INVALID
        value_tp = get_args(base)[1]
        out = {
            k: convert(value_tp, v, (*path, k), issues, parents=parents) for k, v in value.items()
        }
        return INVALID if any(v is INVALID for v in out.values()) else out
    if is_model(base):
        return _convert_model(base, value, path, issues, parents)
    raise TypeError(f"unsupported annotation {tp!r}")


def _convert_duration(value: Any, path: Path, issues: list[Issue]) -> Any:
    seconds: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        seconds = value
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            seconds = parse_duration(value)
    if seconds is not None:
        if not seconds <= MAX_DURATION:  # NaN too
            issues.append(
                (
                    path,
                    f"a duration must be at most {MAX_DURATION_TEXT}, got {_show_number(value)}",
                )
            )
            return INVALID
        return float(seconds)
    if (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
        isinstance(value, str) and value.strip().startswith("-")
    ):
        issues.append((path, f"a duration cannot be negative, got {_show(value)}"))
        return INVALID
    issues.append((path, f"expected a duration such as '250ms', '7s' or '2m', got {_show(value)}"))
    return INVALID


def _convert_union(
    tp: Any,
    members: tuple[Any, ...],
    value: Any,
    path: Path,
    issues: list[Issue],
    parents: Parents,
) -> Any:
    if value is None and type(None) in members:
        return None
    candidates = [m for m in members if m is not type(None)]
    # A mapping goes to the model member, so that its own errors (unknown key...) are reported.
    if isinstance(value, dict):
        models = [m for m in candidates if is_model(_split_annotated(m)[0])]
        if len(models) == 1:
            return convert(models[0], value, path, issues, parents=parents)
    for member in candidates:
        trial: list[Issue] = []
        result = convert(member, value, path, trial, parents=parents)
        if not trial:
            return result
    if len(candidates) == 1:
        return convert(candidates[0], value, path, issues, parents=parents)
    issues.append((path, f"expected {describe(tp)}, got {_show(value)}"))
    return INVALID


def _convert_model(cls: type, value: Any, path: Path, issues: list[Issue], parents: Parents) -> Any:
    if not isinstance(value, dict):
        issues.append((path, f"expected {describe(cls)}, got {_show(value)}"))
        return INVALID
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    broken = False
    for key in value:
        if key not in fields:
            known = ", ".join(fields)
            hint = _belongs(cls, key, parents) or did_you_mean(key, fields)
            issues.append(
                ((*path, key, "<key>"), f"unknown key {key!r}{hint}; expected one of: {known}")
            )
            broken = True
    inside = (*parents, (cls, path))
    for name, f in fields.items():
        if name in value:
            converted = convert(hints[name], value[name], (*path, name), issues, parents=inside)
            if converted is INVALID:
                broken = True
            else:
                kwargs[name] = converted
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            issues.append((path, f"missing required key {name!r} ({describe(hints[name])})"))
            broken = True
    if broken:
        return INVALID
    instance = cls(**kwargs)
    check = getattr(instance, "_check", None)
    if check is not None:
        found = [((*path, *sub), message) for sub, message in check()]
        if found:
            issues.extend(found)
            return INVALID
    return instance


def _belongs(cls: type, key: str, parents: Parents) -> str:
    """Where ``key``, unknown in ``cls``, belongs when a model one level down or up has it."""
    below = [name for name, model in _nested_models(cls) if key in _field_names(model)]
    if below:
        under = " or ".join(repr(name) for name in dict.fromkeys(below))
        return f" (it belongs one level down, under {under})"
    if parents:
        outer, where = parents[-1]
        if key in _field_names(outer):
            place = format_path(where) or "the top level"
            return f" (it belongs one level up, in {place})"
    return ""


def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init)


def _nested_models(cls: type) -> Iterator[tuple[str, type]]:
    """(field name, model) for each model a field of ``cls`` holds, directly or in a list."""
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        for model in _models_in(hints[f.name]):
            yield f.name, model


def _models_in(tp: Any) -> Iterator[type]:
    base, _ = _split_annotated(tp)
    if is_model(base):
        yield base
        return
    members = _union_members(base)
    if members is not None:
        for member in members:
            yield from _models_in(member)
    elif get_origin(base) in (tuple, dict):
        yield from _models_in(get_args(base)[-1] if get_origin(base) is dict else get_args(base)[0])


# --- back to plain values ------------------------------------------------------------------


def to_plain(obj: Any, *, keep_defaults: bool = False) -> Any:
    """Plain YAML/JSON values for a model instance; defaults are left out unless asked for."""
    if is_model(type(obj)):
        out: dict[str, Any] = {}
        hints = _hints(type(obj))
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            default = (
                f.default
                if f.default is not dataclasses.MISSING
                else (
                    f.default_factory() if f.default_factory is not dataclasses.MISSING else INVALID
                )
            )
            if not keep_defaults and value == default:
                continue
            out[f.name] = _plain_field(hints[f.name], value, keep_defaults)
        return out
    if isinstance(obj, tuple):
        return [to_plain(v, keep_defaults=keep_defaults) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v, keep_defaults=keep_defaults) for k, v in obj.items()}
    return obj


def _plain_field(tp: Any, value: Any, keep_defaults: bool) -> Any:
    base, extras = _split_annotated(tp)
    members = _union_members(base) or ()
    is_duration = DURATION in extras or any(DURATION in _split_annotated(m)[1] for m in members)
    if is_duration and isinstance(value, float):
        return format_duration(value)
    if get_origin(base) is tuple and isinstance(value, tuple):
        return [_plain_field(get_args(base)[0], v, keep_defaults) for v in value]
    return to_plain(value, keep_defaults=keep_defaults)


# --- JSON Schema ---------------------------------------------------------------------------


def json_schema(root: type, *, title: str, schema_id: str) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) for documents of model ``root``."""
    defs: dict[str, Any] = {}
    body = _schema_for(root, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        "title": title,
        **body,
        "$defs": dict(sorted(defs.items())),
    }


def _schema_for(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    base, extras = _split_annotated(tp)
    if DURATION in extras:
        return {
            "anyOf": [
                {"type": "string", "pattern": DURATION_PATTERN},
                {"type": "number", "minimum": 0},
            ],
            "description": "A duration: '250ms', '7s', '2m', '1h', or a number of seconds.",
        }
    members = _union_members(base)
    if members is not None:
        return {"anyOf": [_schema_for(m, defs) for m in members]}
    if base is type(None):
        return {"type": "null"}
    if get_origin(base) is Literal:
        return {"enum": list(get_args(base))}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if base in simple:
        schema: dict[str, Any] = {"type": simple[base]}
        bounds = next((e for e in extras if isinstance(e, Bounds)), None)
        if bounds:
            if bounds.minimum is not None:
                schema["minimum"] = bounds.minimum
            if bounds.maximum is not None:
                schema["maximum"] = bounds.maximum
            if bounds.exclusive_minimum is not None:
                schema["exclusiveMinimum"] = bounds.exclusive_minimum
        return schema
    if base is Any:
        return {}
    if get_origin(base) is tuple:
        return {"type": "array", "items": _schema_for(get_args(base)[0], defs)}
    if get_origin(base) is dict:
        return {"type": "object", "additionalProperties": _schema_for(get_args(base)[1], defs)}
    if is_model(base):
        name = base.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            hints = _hints(base)
            props = {}
            required = []
            for f in dataclasses.fields(base):
                prop = _schema_for(hints[f.name], defs)
                if f.metadata.get("doc"):
                    prop = {**prop, "description": f.metadata["doc"]}
                props[f.name] = prop
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    required.append(f.name)
            entry: dict[str, Any] = {
                "type": "object",
                "description": (base.__doc__ or "").strip().splitlines()[0],
                "properties": props,
                "additionalProperties": False,
            }
            if required:
                entry["required"] = required
            defs[name] = entry
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"unsupported annotation {tp!r}")


def iter_fields(cls: type) -> Iterator[tuple[str, Any, str, Any]]:
    """(name, annotation, doc, default) for each field of a model, for the docs generator."""
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        default: Any = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        yield f.name, hints[f.name], f.metadata.get("doc", ""), default
