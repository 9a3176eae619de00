// A tiny Node.js client of the generic wire API, for the CI tests: not Python, and driven
// through `fakeprovider run` (or the action's shell steps) by FAKEPROVIDER_URL alone.
//
//   node node_client.js            a careful client: waits for the poll hint and Retry-After,
//                                  retries 5xx and 429, stops at a terminal status, downloads once
//   node node_client.js --hasty    a buggy one: polls every 20 ms whatever it is told
//
// Exit 0 when the job succeeded and the video was downloaded, 1 otherwise.
"use strict";

const base = process.env.FAKEPROVIDER_URL;
if (!base) {
  console.error("node_client: FAKEPROVIDER_URL is not set");
  process.exit(2);
}
const hasty = process.argv.includes("--hasty");
const TERMINAL = new Set(["succeeded", "failed", "cancelled", "completed_with_errors"]);
const RETRYABLE = new Set([429, 500, 502, 503, 504]);
const sleep = (s) => new Promise((resolve) => setTimeout(resolve, s * 1000));

// Seconds to wait before asking again: Retry-After (seconds or an HTTP-date), else `fallback`.
function waitFrom(response, fallback) {
  const ms = response.headers.get("retry-after-ms");
  if (ms !== null) return Number(ms) / 1000;
  const raw = response.headers.get("retry-after");
  if (raw === null) return fallback;
  const seconds = Number(raw);
  if (!Number.isNaN(seconds)) return seconds;
  const date = Date.parse(raw);
  const now = Date.parse(response.headers.get("date") || "") || Date.now();
  return Math.max(0, (date - now) / 1000) + 1;
}

// One request, retried on 5xx/429 after the time the fake asked for (at most 8 attempts).
async function send(method, path, body, fallback) {
  for (let attempt = 0; attempt < 8; attempt++) {
    const response = await fetch(base + path, {
      method,
      headers: { "content-type": "application/json", "x-client-id": "node" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!RETRYABLE.has(response.status)) return response;
    await response.arrayBuffer();
    await sleep(hasty ? 0.02 : waitFrom(response, fallback));
  }
  throw new Error(`${method} ${path}: still failing after 8 attempts`);
}

async function main() {
  const submitted = await send("POST", "/v1/jobs", { prompt: "a lighthouse at dusk" }, 1);
  let job = await submitted.json();
  const id = job.job_id;
  let hint = job.poll_after_seconds ?? 1;
  while (!TERMINAL.has(job.status)) {
    await sleep(hasty ? 0.02 : hint);
    const read = await send("GET", `/v1/jobs/${id}`, undefined, hint);
    job = await read.json();
    hint = job.poll_after_seconds ?? hint;
  }
  if (job.status !== "succeeded") {
    console.log(`job ${id} ended ${job.status}`);
    return 1;
  }
  const video = await send("GET", `/v1/jobs/${id}/content`, undefined, hint);
  const bytes = (await video.arrayBuffer()).byteLength;
  console.log(`job ${id} succeeded: ${bytes} bytes`);
  return video.status === 200 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`node_client: ${error.message}`);
    process.exit(1);
  },
);
