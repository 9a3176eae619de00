"""The shared vocabulary: refusals, job messages, ids, video bytes, journal fingerprints."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeprovider.messages import (
    ApiError,
    Refusal,
    Request,
    credential_fingerprint,
    default_job_id,
    job_message,
    request_digest,
    scripted_error,
    video_bytes,
)


def test_a_refusal_carries_its_status_code_and_sentence() -> None:
    refusal = Refusal.job_not_cancellable("job_1", "processing", {"queued", "pending"})
    assert (refusal.status, refusal.error) == (
        409,
        ApiError(
            "job_not_cancellable",
            "Job job_1 is 'processing'; only a job that is 'pending' or 'queued' can be cancelled.",
        ),
    )


def test_a_dialects_problem_becomes_its_refusal() -> None:
    request = Request(
        "submit", "POST", "/v1/jobs", problem="Bad.", problem_status=422, problem_code="x"
    )
    assert Refusal.of(request) == Refusal(422, "x", "Bad.")
    assert Refusal.of(Request("submit", "POST", "/v1/jobs")) is None


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (503, ApiError("service_unavailable", "Scripted fault 'busy'.")),
        (418, ApiError("http_418", "Scripted fault 'busy'.")),
        (302, None),
    ],
)
def test_a_scripted_error_is_named_after_its_status(status: int, expected: ApiError | None) -> None:
    assert scripted_error("busy", status) == expected


def test_a_running_job_says_it_is_not_complete_and_when_to_look_again() -> None:
    assert job_message("queued", 2.5) == (
        "The job is queued and NOT complete. Do not report success. Check status_url again"
        " after at least 2.5 seconds."
    )
    assert job_message("succeeded", None) == (
        "The job succeeded. Download the result once from the content URL."
    )


def test_job_ids_depend_on_the_seed_and_the_number_only() -> None:
    assert default_job_id(7, 1) == default_job_id(7, 1)
    assert len({default_job_id(7, 1), default_job_id(7, 2), default_job_id(8, 1)}) == 3
    assert default_job_id(7, 1) == "job_d7a0cee7b61e"  # journals of earlier runs keep matching


def test_video_bytes_are_an_mp4_of_the_asked_size() -> None:
    video = video_bytes("job_1", 1000)
    assert (len(video), video[4:8]) == (1000, b"ftyp")
    assert video == video_bytes("job_1", 1000) != video_bytes("job_2", 1000)


def test_the_journal_keeps_a_fingerprint_never_the_credential() -> None:
    assert credential_fingerprint("sk-secret") == "cred_746b4ad1"
    assert credential_fingerprint(None) is None


def test_equal_bodies_have_equal_digests_whatever_the_key_order() -> None:
    assert request_digest({"a": 1, "b": 2}) == request_digest({"b": 2, "a": 1})
    assert request_digest({"a": 1}) != request_digest({"a": 2})
    assert request_digest(None) == request_digest({})


def test_a_request_digest_is_the_sha256_of_the_sorted_compact_json_of_the_body() -> None:
    body = {"prompt": "caf\u00e9", "n": [1, 2.5], "meta": {"b": 1, "a": None}, "when": object}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    assert request_digest(body) == hashlib.sha256(text.encode()).hexdigest()[:16]


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=12,
    ).map(lambda value: {"body": value})
)
def test_the_digest_encoder_made_once_writes_what_json_dumps_writes(body: dict[str, Any]) -> None:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    assert request_digest(body) == hashlib.sha256(text.encode()).hexdigest()[:16]


@given(
    st.dictionaries(
        st.text(),
        st.none() | st.booleans() | st.integers() | st.text() | st.floats(),
        max_size=6,
    )
)
def test_a_flat_bodys_digest_is_the_sha256_of_what_json_dumps_writes(body: dict[str, Any]) -> None:
    # flat bodies of strings, integers, booleans and None are written by msgspec: any
    # character (controls, DEL, non-ASCII, lone surrogates), any integer, any key order
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    assert request_digest(body) == hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize("prompt", ["\x7f", "a cat\x7f", "x" * 200 + "\x7f", "no del here"])
def test_a_flat_body_with_del_has_the_digest_of_json_dumps_escaping_it(prompt: str) -> None:
    # msgspec writes DEL raw, json.dumps as \u007f: the digest is json.dumps's
    text = json.dumps({"prompt": prompt}, sort_keys=True, separators=(",", ":"))
    assert request_digest({"prompt": prompt}) == hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    "body",
    [
        {"prompt": "a cat riding a bicycle", "n": 2, "hd": True, "seed": None},
        {"Z": "", "a": "\x7f", "_": '\x00\x1f\n"\\/'},
        {"prompt": "caf\u00e9"},
        {"prompt": "\ud800"},
        {"big": 2**70, "small": -(2**64)},
        {},
    ],
)
def test_a_flat_bodys_digest_does_not_depend_on_msgspec(
    body: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with_msgspec = request_digest(body)
    monkeypatch.setattr("fakeprovider.messages._SORTED", None)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    assert with_msgspec == request_digest(body) == hashlib.sha256(text.encode()).hexdigest()[:16]


def test_ids_digests_and_fingerprints_are_sha256_whichever_implementation_makes_it() -> None:
    assert default_job_id(3, 14) == "job_" + hashlib.sha256(b"3:14").hexdigest()[:12]
    assert credential_fingerprint("k") == "cred_" + hashlib.sha256(b"k").hexdigest()[:8]
    assert request_digest({"a": 1}) == hashlib.sha256(b'{"a":1}').hexdigest()[:16]


@pytest.mark.parametrize("length", [0, 1, 50, 51, 52, 53, 54, 55, 56, 100, 3000])
@pytest.mark.parametrize("prompt", ["a", "\u00e9"])
def test_a_digest_is_the_same_sha256_on_either_side_of_the_long_input_threshold(
    length: int, prompt: str
) -> None:
    # '{"prompt":"' and '"}' take 13 bytes: lengths 50-56 put the text hashed at 63-69 bytes,
    # across the 64 from which OpenSSL hashes it (non-ASCII takes json.dumps's text, escaped)
    body = {"prompt": prompt * length}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    assert request_digest(body) == hashlib.sha256(text.encode()).hexdigest()[:16]
