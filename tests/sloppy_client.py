"""A sloppy client for the README screenshot: waits for the poll hint, but retries a 5xx
after 0.15 s whatever Retry-After says, and downloads twice."""
import json, os, time, urllib.request, urllib.error
url = os.environ["FAKEPROVIDER_URL"]
def call(method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"content-type": "application/json", "X-Client-Id": "sloppy"})
    try:
        with urllib.request.urlopen(req) as r:
            data = r.read()
            return r.status, (json.loads(data) if r.headers.get("content-type", "").startswith("application/json") else {})
    except urllib.error.HTTPError as e:
        return e.code, {}
jobs = {}
for prompt in ("a lighthouse at dusk", "a fox in the snow"):
    code, body = call("POST", "/v1/jobs", {"prompt": prompt})
    jobs[body["job_id"]] = body.get("poll_after_seconds", 1)
    time.sleep(0.4)
pending = set(jobs)
start = time.time()
while pending and time.time() - start < 20:
    for j in sorted(pending):
        code, body = call("GET", f"/v1/jobs/{j}")
        if body.get("status") in ("succeeded", "failed"):
            pending.discard(j)
            call("GET", f"/v1/jobs/{j}/content"); time.sleep(0.1); call("GET", f"/v1/jobs/{j}/content")
        elif code == 200:
            jobs[j] = body.get("poll_after_seconds", jobs[j])
        else:
            time.sleep(0.15); call("GET", f"/v1/jobs/{j}")
    time.sleep(min(jobs.values()))
