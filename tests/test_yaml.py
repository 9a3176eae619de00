"""YAML with positions: aliases expand as in ``safe_load``, but a billion laughs is refused."""

from __future__ import annotations

import pytest

from fakeprovider._yaml import MAX_ALIAS_VALUES, YamlSyntaxError, _Converter, load_located


def _laughs(levels: int) -> str:
    lines = ['l0: &l0 ["x","x","x","x","x","x","x","x","x"]']
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ",".join([f"*l{level - 1}"] * 9) + "]")
    return "\n".join([*lines, f"jobs: *l{levels - 1}", ""])


def test_aliases_expand_like_safe_load() -> None:
    value, positions = load_located("a: &a {status: queued}\nb: [*a, *a]\n")
    assert value == {"a": {"status": "queued"}, "b": [{"status": "queued"}] * 2}
    assert positions[("b", 1)] == (1, 4)  # a repeated value is located at its anchor


@pytest.mark.parametrize("levels", [5, 7])
def test_an_alias_bomb_is_refused_at_once(levels: int, monkeypatch: pytest.MonkeyPatch) -> None:
    converted = 0
    convert = _Converter.convert

    def counting(self: _Converter, node: object, path: tuple[str | int, ...]) -> object:
        nonlocal converted
        converted += 1
        return convert(self, node, path)  # type: ignore[arg-type]

    monkeypatch.setattr(_Converter, "convert", counting)
    with pytest.raises(YamlSyntaxError) as refused:
        load_located(_laughs(levels))
    # refused at the limit, not after expanding 9**levels values (59,049 or 4,782,969): the
    # values converted are the repeats allowed plus a few of the document's own
    assert MAX_ALIAS_VALUES < converted < MAX_ALIAS_VALUES + 50
    assert refused.value.message == (
        f"aliases repeat more than {MAX_ALIAS_VALUES} values; "
        "write the values out or use fewer aliases"
    )


def test_aliases_may_repeat_up_to_the_limit() -> None:
    items = ",".join(["*a"] * (MAX_ALIAS_VALUES // 2))
    value, _ = load_located(f"a: &a [1]\nb: [{items}]\n")  # each alias: the list and its item
    assert len(value["b"]) == MAX_ALIAS_VALUES // 2
