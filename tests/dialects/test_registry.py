"""fakeprovider.dialects: the registry follows the one list of names, and one check names them."""

from __future__ import annotations

import re

import pytest

from fakeprovider.dialects import DIALECTS, dialect_name, get_dialect
from fakeprovider.scenario import DIALECT_NAMES

KNOWN = "ark, dashscope, fal, gemini, generic, google-veo, luma, openai-videos, replicate, runway"


def test_every_name_of_the_scenario_format_has_its_dialect_in_the_same_order() -> None:
    assert tuple(DIALECTS) == DIALECT_NAMES
    assert [get_dialect(name).name for name in DIALECT_NAMES] == list(DIALECT_NAMES)


def test_a_known_name_passes_the_check() -> None:
    assert dialect_name("google-veo") == "google-veo"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("klingon", f"unknown dialect 'klingon'; known dialects: {KNOWN}"),
        (
            "openai",
            f"unknown dialect 'openai' (did you mean 'openai-videos'?); known dialects: {KNOWN}",
        ),
    ],
)
def test_an_unknown_name_is_refused_with_one_message_by_the_check_and_by_get_dialect(
    name: str, message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        dialect_name(name)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        get_dialect(name)
