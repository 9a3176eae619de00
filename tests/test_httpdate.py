"""HTTP-dates in the three RFC 9110 forms."""

from __future__ import annotations

import email.utils

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider.httpdate import format_http_date, parse_http_date, parse_retry_after

RFC_EXAMPLE = 784111777  # Sun, 06 Nov 1994 08:49:37 GMT, the RFC's own example


@pytest.mark.parametrize(
    ("form", "text"),
    [
        ("imf", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ("rfc850", "Sunday, 06-Nov-94 08:49:37 GMT"),
        ("asctime", "Sun Nov  6 08:49:37 1994"),
    ],
)
def test_each_form_matches_the_rfc_example(form: str, text: str) -> None:
    assert format_http_date(RFC_EXAMPLE, form) == text  # type: ignore[arg-type]
    assert parse_http_date(text) == RFC_EXAMPLE


@given(
    unix=st.integers(min_value=1_700_000_000, max_value=2_000_000_000),
    form=st.sampled_from(["imf", "rfc850", "asctime"]),
)
def test_every_form_parses_back_with_email_utils(unix: int, form: str) -> None:
    text = format_http_date(unix, form)  # type: ignore[arg-type]
    parsed = email.utils.parsedate_to_datetime(text)
    naive_is_utc = parsed.tzinfo is None
    assert (parsed.replace(tzinfo=None) if naive_is_utc else parsed).timetuple()[:6] == __import__(
        "time"
    ).gmtime(unix)[:6]
    assert parse_http_date(text) == unix


def test_fractions_are_rounded_down() -> None:
    assert format_http_date(RFC_EXAMPLE + 0.999) == "Sun, 06 Nov 1994 08:49:37 GMT"


def test_unknown_form_is_refused() -> None:
    with pytest.raises(
        ValueError,
        match=r"^unknown HTTP-date form 'rfc1123'; expected 'imf', 'rfc850' or 'asctime'$",
    ):
        format_http_date(0, "rfc1123")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 1120.0),
        (" 7 ", 1007.0),
        ("Thu, 01 Jan 1970 00:20:00 GMT", 1200.0),
        ("soon", None),
        ("-3", None),
        ("1.5", None),
    ],
)
def test_parse_retry_after(value: str, expected: float | None) -> None:
    assert parse_retry_after(value, date_of_response=1000.0) == expected
