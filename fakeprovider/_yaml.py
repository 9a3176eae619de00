"""YAML with ``yaml.safe_load`` semantics that remembers where every value came from.

``load_located(text)`` returns plain Python values plus a table from each value's path
(a tuple of keys and indexes) to its 1-based ``(line, column)``, so that validation errors
can point at the exact spot in the file.

Aliases are expanded (as ``safe_load`` does), but only up to ``MAX_ALIAS_VALUES`` repeated
values in all: a "billion laughs" document of nested aliases is refused at once instead of
expanding into millions of values.
"""

from __future__ import annotations

from typing import Any

import yaml

Path = tuple[str | int, ...]
Positions = dict[Path, tuple[int, int]]

#: How many values aliases may repeat, in all, in one document (each alias costs the size of
#: the value it names). Scenarios that reuse a fault or a timeline stay far below it.
MAX_ALIAS_VALUES = 10_000


class YamlSyntaxError(Exception):
    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message


def _position(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def load_located(text: str) -> tuple[Any, Positions]:
    """Parse one YAML document; raise ``YamlSyntaxError`` with a position when it is not YAML."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        positions: Positions = {}
        value = None if node is None else _Converter(loader, positions).convert(node, ())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        unclosed = (
            exc.context == "while scanning a quoted scalar"
            and "end of stream" in (exc.problem or "")
            and exc.context_mark is not None
        )
        if unclosed:  # point at the quote that never closes, not at the end of the file
            mark = exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = "this quoted string is never closed" if unclosed else _explain(exc)
        raise YamlSyntaxError(line, column, f"invalid YAML: {message}") from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(1, 1, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    if node is None:
        positions[()] = (1, 1)
    return value, positions


def _explain(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's complaint, in words that say what to change, with where the trouble began."""
    problem = exc.problem or exc.context or "not YAML"
    context, opened = exc.context, exc.context_mark
    began = f"{opened.line + 1}:{opened.column + 1}" if opened is not None else None
    if "'\\t'" in problem:
        return "a tab character; indent with spaces, not tabs"
    if problem.startswith(("expected <block end>", "did not find expected key")) and began:
        what = context.removeprefix("while parsing a ") if context else "block"
        return (
            f"this line is not indented like the {what} that starts at {began}: keys of one "
            "mapping, and the '-' items of one list, must start in the same column"
        )
    if context and began and exc.context_mark is not exc.problem_mark:
        return f"{problem} ({context} that starts at {began})"
    return problem


class _Converter:
    """Turns composed nodes into values, recording positions and counting alias repeats."""

    def __init__(self, loader: yaml.SafeLoader, positions: Positions) -> None:
        self.loader = loader
        self.positions = positions
        self.seen: set[int] = set()
        self.repeated = 0

    def convert(self, node: yaml.Node, path: Path) -> Any:
        # An alias is the very node its anchor named: a node met again is a repeat.
        if id(node) in self.seen:
            self.repeated += 1
            if self.repeated > MAX_ALIAS_VALUES:
                line, column = _position(node)
                raise YamlSyntaxError(
                    line,
                    column,
                    f"aliases repeat more than {MAX_ALIAS_VALUES} values; "
                    "write the values out or use fewer aliases",
                )
        else:
            self.seen.add(id(node))
        positions, loader = self.positions, self.loader
        positions[path] = _position(node)
        if isinstance(node, yaml.MappingNode):
            loader.flatten_mapping(node)
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = loader.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    key = str(key)
                if key in result:
                    line, column = _position(key_node)
                    raise YamlSyntaxError(
                        line, column, f"duplicate key {key!r}; each key may appear once"
                    )
                child = (*path, key)
                result[key] = self.convert(value_node, child)
                # A key's own position is more useful than its value's for "unknown key" errors.
                positions[(*child, "<key>")] = _position(key_node)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(item, (*path, index)) for index, item in enumerate(node.value)]
        return loader.construct_object(node, deep=True)
