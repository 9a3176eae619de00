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
#: How deep values may nest (mappings and lists inside each other). A scenario needs about 5.
MAX_DEPTH = 64


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
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:
        raise _unreadable(text, exc) from None
    try:
        node = loader.get_single_node()
        positions: Positions = {}
        value = None if node is None else _Converter(loader, positions, text).convert(node, ())
    except yaml.reader.ReaderError as exc:
        raise _unreadable(text, exc) from None
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
    except RecursionError:
        # PyYAML composes nested collections recursively: say where it gave up
        mark = loader.get_mark()
        raise YamlSyntaxError(
            mark.line + 1,
            mark.column + 1,
            f"invalid YAML: nested too deeply; values may nest at most {MAX_DEPTH} levels",
        ) from None
    finally:
        loader.dispose()
    if node is None:
        positions[()] = (1, 1)
    return value, positions


def _unreadable(text: str, exc: yaml.reader.ReaderError) -> YamlSyntaxError:
    """A character YAML does not allow (NUL, most control characters), with its position."""
    before = text[: exc.position]
    line = before.count("\n") + 1
    column = exc.position - (before.rfind("\n") + 1) + 1
    code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
    return YamlSyntaxError(
        line,
        column,
        f"invalid YAML: the character U+{code:04X} is not allowed in YAML (a control"
        ' character); remove it, or write it as an escape such as "\\x00" in a'
        " double-quoted string",
    )


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


_KINDS = {
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "true or false",
    "tag:yaml.org,2002:timestamp": "a date",
    "tag:yaml.org,2002:binary": "base64 data",
    "tag:yaml.org,2002:null": "null",
}


class _Converter:
    """Turns composed nodes into values, recording positions and counting alias repeats."""

    def __init__(self, loader: yaml.SafeLoader, positions: Positions, text: str) -> None:
        self.loader = loader
        self.positions = positions
        self.text = text
        self.seen: set[int] = set()
        self.inside: set[int] = set()  # the collections being converted (the current path)
        self.repeated = 0

    def convert(self, node: yaml.Node, path: Path) -> Any:
        line, column = _position(node)
        if id(node) in self.inside:
            raise YamlSyntaxError(
                line,
                column,
                "invalid YAML: a recursive alias (this value contains itself); an alias must"
                " not refer to a value it is inside",
            )
        if len(path) > MAX_DEPTH:
            raise YamlSyntaxError(
                line, column, f"values nest more than {MAX_DEPTH} levels deep; flatten them"
            )
        # An alias is the very node its anchor named: a node met again is a repeat.
        if id(node) in self.seen:
            self.repeated += 1
            if self.repeated > MAX_ALIAS_VALUES:
                raise YamlSyntaxError(
                    line,
                    column,
                    f"aliases repeat more than {MAX_ALIAS_VALUES} values; "
                    "write the values out or use fewer aliases",
                )
        else:
            self.seen.add(id(node))
        self.positions[path] = (line, column)
        if isinstance(node, yaml.MappingNode):
            self.inside.add(id(node))
            try:
                return self._mapping(node, path)
            finally:
                self.inside.discard(id(node))
        if isinstance(node, yaml.SequenceNode):
            self.inside.add(id(node))
            try:
                return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
            finally:
                self.inside.discard(id(node))
        return self._scalar(node)

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[Any, Any]:
        loader = self.loader
        try:
            loader.flatten_mapping(node)
        except RecursionError:
            line, column = _position(node)
            raise YamlSyntaxError(
                line, column, "invalid YAML: a merge key ('<<') that merges a mapping into itself"
            ) from None
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                line, column = _position(key_node)
                raise YamlSyntaxError(
                    line,
                    column,
                    "a key must be a plain value such as a name, not a list or mapping",
                )
            key = self._scalar(key_node)
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
            self.positions[(*child, "<key>")] = _position(key_node)
        return result

    def _scalar(self, node: yaml.Node) -> Any:
        """The value of a scalar; one PyYAML cannot build (``2001-13-45``, a 5,000-digit
        integer, ``!!float abc``, ``!!bool maybe``) is an error at its position."""
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError:
            raise
        except (ValueError, ArithmeticError, KeyError, TypeError, AttributeError) as exc:
            line, column = _position(node)
            kind = _KINDS.get(node.tag, f"a value tagged {node.tag!r}")
            raw = str(node.value)
            shown = raw if len(raw) <= 40 else raw[:37] + "..."
            why = " ".join(str(exc).split(";")[0].split()) if isinstance(exc, ValueError) else ""
            why = f" ({why})" if why and len(why) <= 80 else ""
            explicit = self.text[node.start_mark.index : node.start_mark.index + 1] == "!"
            hint = (
                "; fix the value or remove the tag"
                if explicit
                else "; quote it to make it a string"
            )
            raise YamlSyntaxError(
                line, column, f"{shown!r} cannot be read as {kind}{why}{hint}"
            ) from None
