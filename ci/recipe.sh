#!/usr/bin/env bash
# The plain shell recipe for any CI system: start the fake in the background, wait until it
# listens (with a timeout, noticing when it dies: a port already taken, a bad scenario), run
# the client, check the journal, and never leave the server running.
# Usage: [TIME_SCALE=0.1] ci/recipe.sh SCENARIO COMMAND [ARGS...]
# (fakeprovider run SCENARIO -- COMMAND does all this in one command)
set -euo pipefail
scenario=$1; shift
work=$(mktemp -d)
fakeprovider serve "$scenario" --port 0 --time-scale "${TIME_SCALE:-1}" \
  --journal "$work/journal.jsonl" --ready-file "$work/url" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do                                   # up to 10 s
  [ -s "$work/url" ] && break
  kill -0 "$server" 2>/dev/null || { echo "fakeprovider did not start" >&2; exit 2; }
  sleep 0.1
done
[ -s "$work/url" ] || { echo "fakeprovider did not answer within 10 s" >&2; exit 2; }
export FAKEPROVIDER_URL=$(cat "$work/url")
status=0
"$@" || status=$?                                         # the client, in any language
fakeprovider check "$work/journal.jsonl" || status=1      # limits from the journal's run header
exit "$status"
