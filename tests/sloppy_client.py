"""The client of the README's report screenshot (docs/report.png): waits for the poll hint, but
retries a 5xx after 0.15 s whatever ``Retry-After`` says, and downloads each video twice.

    fakeprovider run transient-5xx --time-scale 0.1 --report-html report.html -- \\
        python3 tests/sloppy_client.py
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

URL = os.environ["FAKEPROVIDER_URL"]


def call(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        URL + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": "application/json", "X-Client-Id": "sloppy"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            data = response.read()
            is_json = response.headers.get("content-type", "").startswith("application/json")
            return response.status, json.loads(data) if is_json else {}
    except urllib.error.HTTPError as error:
        return error.code, {}


def main() -> None:
    hints: dict[str, float] = {}
    for prompt in ("a lighthouse at dusk", "a fox in the snow"):
        _, body = call("POST", "/v1/jobs", {"prompt": prompt})
        hints[body["job_id"]] = body.get("poll_after_seconds", 1)
        time.sleep(0.4)
    pending = set(hints)
    started = time.monotonic()
    while pending and time.monotonic() - started < 20:
        for job in sorted(pending):
            code, body = call("GET", f"/v1/jobs/{job}")
            if body.get("status") in ("succeeded", "failed"):
                pending.discard(job)
                call("GET", f"/v1/jobs/{job}/content")
                time.sleep(0.1)
                call("GET", f"/v1/jobs/{job}/content")  # the bug: a second download
            elif code == 200:
                hints[job] = body.get("poll_after_seconds", hints[job])
            else:
                time.sleep(0.15)  # the bug: Retry-After ignored
                call("GET", f"/v1/jobs/{job}")
        time.sleep(min(hints.values()))


if __name__ == "__main__":
    main()
