#!/usr/bin/env bash
# The action's step, runnable anywhere: configured by FP_* variables (see action.yml), writes
# its outputs to $GITHUB_OUTPUT and, with FP_START_ONLY=true, FAKEPROVIDER_URL and
# FAKEPROVIDER_JOURNAL to $GITHUB_ENV for the later steps.
set -euo pipefail
: "${FP_SCENARIO:?set FP_SCENARIO to a bundled scenario name or a scenario file}"
temp=${RUNNER_TEMP:-${TMPDIR:-/tmp}}
output=${GITHUB_OUTPUT:-/dev/null}
journal=${FP_JOURNAL:-$temp/fakeprovider-journal.jsonl}
options=(--journal "$journal" --time-scale "${FP_TIME_SCALE:-1}")
[ -n "${FP_DIALECT:-}" ] && options+=(--dialect "$FP_DIALECT")
[ -n "${FP_SEED:-}" ] && options+=(--seed "$FP_SEED")
echo "journal=$journal" >> "$output"

if [ "${FP_START_ONLY:-false}" = "true" ]; then
  ready="$temp/fakeprovider-$$.url"
  rm -f "$ready"
  nohup fakeprovider serve "$FP_SCENARIO" --port 0 --ready-file "$ready" "${options[@]}" \
    > "$temp/fakeprovider-$$.log" 2>&1 &
  server=$!
  for _ in $(seq 150); do                       # up to 15 s
    [ -s "$ready" ] && break
    if ! kill -0 "$server" 2>/dev/null; then
      cat "$temp/fakeprovider-$$.log" >&2
      echo "::error title=fakeprovider::the server did not start" >&2
      exit 2
    fi
    sleep 0.1
  done
  if [ ! -s "$ready" ]; then
    kill "$server" 2>/dev/null || true
    echo "::error title=fakeprovider::the server did not answer within 15 s" >&2
    exit 2
  fi
  url=$(cat "$ready")
  { echo "url=$url"; echo "pid=$server"; } >> "$output"
  if [ -n "${GITHUB_ENV:-}" ]; then
    { echo "FAKEPROVIDER_URL=$url"; echo "FAKEPROVIDER_JOURNAL=$journal"; } >> "$GITHUB_ENV"
  fi
  echo "fakeprovider: serving $FP_SCENARIO at $url (pid $server)"
  exit 0
fi

: "${FP_COMMAND:?set FP_COMMAND (the command that runs your client) or FP_START_ONLY=true}"
[ -n "${FP_JUNIT:-}" ] && options+=(--junit "$FP_JUNIT")
[ -n "${FP_REPORT_HTML:-}" ] && options+=(--report-html "$FP_REPORT_HTML")
format=text
[ -n "${GITHUB_ACTIONS:-}" ] && format=github
read -r -a extra <<< "${FP_CHECK_OPTIONS:-}"
# The command records the URL as an output first, then runs as written (it sees
# FAKEPROVIDER_URL and FAKEPROVIDER_JOURNAL).
exec fakeprovider run "$FP_SCENARIO" "${options[@]}" --format "$format" "${extra[@]}" -- \
  bash -c 'echo "url=$FAKEPROVIDER_URL" >> "$1"; eval "$2"' fakeprovider "$output" "$FP_COMMAND"
