"""The google-veo dialect: exact wire shapes, and the real ``google-genai`` SDK against the fake."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest

from fakeprovider.messages import video_bytes

from .helpers import (
    CLIENT_HEADERS,
    call,
    last_status,
    serve_inprocess,
    settled,
    unusual,
    violated,
    violations,
    virtual,
)
from .sdk import needs, optional

MODEL = "publishers/google/models/veo-3.0-generate-001"
REGIONAL = f"projects/p/locations/us-central1/{MODEL}"
CREATE = {
    "instances": [{"prompt": "a cat"}],
    "parameters": {"sampleCount": 1, "durationSeconds": 8},
}


@pytest.mark.parametrize("resource", [MODEL, REGIONAL])
def test_operations_through_both_path_shapes(resource: str) -> None:
    provider, clock = virtual("google-veo")
    status, _, operation = call(
        provider, "POST", f"/v1beta1/{resource}:predictLongRunning", json_body=CREATE
    )
    job_id = provider.engine.jobs[0].id
    name = f"{resource}/operations/{job_id}"
    assert (status, operation) == (200, {"name": name, "done": False})
    fetch = f"/v1beta1/{resource}:fetchPredictOperation"
    assert call(provider, "POST", fetch, json_body={"operationName": name})[:3:2] == (
        200,
        {"name": name, "done": False},
    )
    clock.advance(100)
    status, _, done = call(provider, "POST", fetch, json_body={"operationName": name})
    video = base64.b64encode(video_bytes(job_id, 1048576)).decode()
    assert (status, done) == (
        200,
        {
            "name": name,
            "done": True,
            "response": {
                "@type": "type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse",
                "videos": [{"bytesBase64Encoded": video, "mimeType": "video/mp4"}],
            },
        },
    )
    assert [(e.kind, e.job_id, e.status_code, e.job_status) for e in provider.entries] == [
        ("submit", job_id, 200, "queued"),
        ("status", job_id, 200, "queued"),
        ("status", job_id, 200, "succeeded"),
    ]


def test_failed_operation_storage_uri_and_errors() -> None:
    provider, clock = virtual("google-veo", "terminal-failure")
    body = {**CREATE, "parameters": {"storageUri": "gs://bucket/out/"}}
    _, _, operation = call(provider, "POST", f"/v1beta1/{MODEL}:predictLongRunning", json_body=body)
    clock.advance(45)
    fetch = f"/v1beta1/{MODEL}:fetchPredictOperation"
    _, _, done = call(provider, "POST", fetch, json_body={"operationName": operation["name"]})
    assert done["error"] == {
        "code": 13,
        "message": "The prompt was rejected by the safety system after generation started.",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "content_policy_violation",
                "domain": "fakeprovider",
            }
        ],
    }
    assert call(provider, "POST", fetch, json_body={})[:3:2] == (
        400,
        {
            "error": {
                "code": 400,
                "message": "'operationName' is required: the name of the operation that predictLongRunning returned.",
                "status": "INVALID_ARGUMENT",
            }
        },
    )
    missing = call(provider, "POST", fetch, json_body={"operationName": f"{MODEL}/operations/nope"})
    assert (missing[0], missing[2]["error"]["status"]) == (404, "NOT_FOUND")
    assert call(provider, "GET", f"/v1beta1/{MODEL}:fetchPredictOperation")[0] == 405


def test_success_with_storage_uri_gives_a_gcs_uri() -> None:
    provider, clock = virtual("google-veo")
    body = {**CREATE, "parameters": {"storageUri": "gs://bucket/out/"}}
    _, _, operation = call(provider, "POST", f"/v1beta1/{MODEL}:predictLongRunning", json_body=body)
    clock.advance(100)
    fetch = f"/v1beta1/{MODEL}:fetchPredictOperation"
    _, _, done = call(provider, "POST", fetch, json_body={"operationName": operation["name"]})
    job_id = provider.engine.jobs[0].id
    assert done["response"]["videos"] == [
        {"gcsUri": f"gs://bucket/out/{job_id}/sample_0.mp4", "mimeType": "video/mp4"}
    ]


# -- the real SDK ----------------------------------------------------------------------------

genai = optional("google.genai")
needs_genai = needs("google.genai")
errors = optional("google.genai.errors")
types = optional("google.genai.types")


def run_sdk(url: str, *, reread: bool = False) -> Any:
    """google-genai has no waiter: poll operations.get as its docstring shows, every 0.1 s.

    ``reread``: a buggy client that reads the finished operation once more (to "fetch the
    result"), which downloads the inline video a second time."""
    client = genai.Client(
        vertexai=True,
        api_key="test-api-key",
        http_options=types.HttpOptions(base_url=f"{url}/", headers=CLIENT_HEADERS),
    )
    operation = client.models.generate_videos(
        model="veo-3.0-generate-001", source=types.GenerateVideosSource(prompt="a cat")
    )
    while not operation.done:
        time.sleep(0.1)
        operation = client.operations.get(operation)
    if reread:
        operation = client.operations.get(operation)
    client.close()
    return operation


@needs_genai
def test_sdk_slow_success() -> None:
    with serve_inprocess("google-veo", "slow-success") as (provider, url):
        operation = run_sdk(url)
        video = operation.result.generated_videos[0].video
        assert (len(video.video_bytes), video.mime_type) == (1048576, "video/mp4")
        entries = settled(provider)
        assert unusual(entries) == [("submit", 200, None)]
        # The video comes inline in the status read that shows the operation done: that read
        # is the retrieval, so the scenario's ``retrievals: 1`` holds with no download.
        assert [e.seq for e in entries if e.inline_result] == [entries[-1].seq]
        assert entries[-1].job_status == "succeeded"
        assert violated(provider) == set()


@needs_genai
def test_a_client_that_rereads_the_finished_operation_retrieves_the_video_twice() -> None:
    with serve_inprocess("google-veo", "slow-success") as (provider, url):
        run_sdk(url, reread=True)
        entries = settled(provider)
        first, second = (e for e in entries if e.inline_result)
        assert violated(provider) == {"single_retrieval", "stops_at_terminal"}
        [twice] = [v for v in violations(provider) if v.invariant == "single_retrieval"]
        assert twice.seqs == (first.seq, second.seq)
        assert twice.message == (
            f"status read #{second.seq} for job {second.job_id} at"
            f" {second.received_at:.3f} s received the result inline again; #{first.seq} had"
            f" already retrieved it at {first.received_at:.3f} s and it may be fetched once"
        )


def test_an_operation_written_to_storage_is_no_inline_retrieval() -> None:
    provider, clock = virtual("google-veo")
    create = {**CREATE, "parameters": {"storageUri": "gs://bucket/out"}}
    _, _, operation = call(
        provider, "POST", f"/v1beta1/{MODEL}:predictLongRunning", json_body=create
    )
    clock.advance(100)
    fetch = f"/v1beta1/{MODEL}:fetchPredictOperation"
    call(provider, "POST", fetch, json_body={"operationName": operation["name"]})
    assert [(e.job_status, e.inline_result) for e in provider.entries] == [
        ("queued", None),
        ("succeeded", None),
    ]


@needs_genai
def test_sdk_terminal_failure() -> None:
    with serve_inprocess("google-veo", "terminal-failure") as (provider, url):
        operation = run_sdk(url)
        assert (operation.error["code"], operation.result) == (13, None)
        assert violated(provider) == set()


@needs_genai
def test_sdk_cancelled() -> None:
    with serve_inprocess("google-veo", "cancelled") as (provider, url):
        operation = run_sdk(url)
        assert operation.error["code"] == 1
        assert last_status(settled(provider)) == "cancelled"
        assert violated(provider) == set()


@needs_genai
def test_finding_sdk_does_not_retry_5xx_by_default() -> None:
    with serve_inprocess("google-veo", "transient-5xx") as (provider, url):
        with pytest.raises(errors.ServerError) as caught:
            run_sdk(url)
        assert (caught.value.code, caught.value.status) == (503, "UNAVAILABLE")
        assert unusual(settled(provider)) == [
            ("submit", 200, None),
            ("status", 503, "upstream-503"),
        ]
        assert violated(provider) == set()


@needs_genai
def test_finding_sdk_does_not_retry_429_by_default() -> None:
    with serve_inprocess("google-veo", "rate-limited") as (provider, url):
        with pytest.raises(errors.ClientError) as caught:
            run_sdk(url)
        assert (caught.value.code, caught.value.status) == (429, "RESOURCE_EXHAUSTED")
        assert violated(provider) == set()
