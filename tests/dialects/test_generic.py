"""The generic dialect's submit validation, message by message."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import call, virtual


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "veo"}, "'prompt' is required and must be a non-empty string."),
        ({"prompt": "   "}, "'prompt' is required and must be a non-empty string."),
        ({"prompt": "a cat", "model": 5}, "'model' must be a string."),
        ({"prompt": "a cat", "callback_url": 3}, "'callback_url' must be a string."),
    ],
)
def test_submit_fields_of_the_wrong_type_get_422(body: dict[str, Any], message: str) -> None:
    provider, _ = virtual("generic")
    status, _, payload = call(provider, "POST", "/v1/jobs", json_body=body)
    assert (status, payload["error"]) == (422, {"code": "invalid_request", "message": message})
    assert [(e.kind, e.status_code) for e in provider.entries] == [("submit", 422)]
