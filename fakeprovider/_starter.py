"""``fakeprovider new``: a commented starter scenario, or a renamed copy of a bundled one.

Both are checked with the loader before they are returned, so what ``new`` writes always
validates as written. In the starter, optional sections are commented out as whole blocks, each
after a ``# Uncomment ...`` line: removing the ``# `` of the block's lines keeps the file valid.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from .scenario import DIALECT_NAMES, bundled_scenarios, load_scenario, parse_scenario

__all__ = ["NAME_PATTERN", "copy_of", "starter"]

#: What ``new NAME`` accepts: it names the scenario and, without ``-o``, the file.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

_STARTER = """\
# {name}: a fakeprovider scenario, written by `fakeprovider new`.
# The format: docs/scenarios.md, or `fakeprovider schema -o fakeprovider.schema.json` for your
# editor. Check this file with `fakeprovider validate`, read it back with `fakeprovider explain`,
# play it with `fakeprovider serve`.
name: {scalar}
description: One job that takes a minute, with a 503 on the second status read.
# The API the fake speaks: {dialects}.
dialect: generic
seed: 0                     # drives probabilities and job ids

jobs:                       # one entry per kind of job; submits take them in order,
  - name: render            # and the last one repeats for any further submit
    poll_after: 5s          # the poll hint shown while the job runs
    timeline:               # from each step on, the job shows that state
      - status: queued                          # the first step starts at the submit
      - {{at: 5s, status: processing, progress: 10}}
      - {{at: 30s, progress: 60}}                 # or after_polls: N (the client's Nth read)
      - {{at: 60s, status: succeeded}}            # terminal: nothing may follow
    result: {{size_bytes: 262144}}                # the video the content route serves

faults:                     # checked in order; the first that fires answers
  - name: upstream-503
    route: status           # submit, status, content, cancel, list or any
    nth: 2                  # the 2nd status read (or every: k, start:/end:, probability:)
    status: 503
    retry_after: 10s        # sent as Retry-After: 10

# Uncomment to limit requests with a token bucket (429 with a computed Retry-After):
# rate_limit:
#   capacity: 5
#   refill_every: 2s
#   routes: [status]

# Uncomment to send signed webhooks (Standard Webhooks) to each job's callback_url:
# webhooks:
#   url: http://127.0.0.1:9000/hooks   # for submits without a callback_url
#   events: [job.succeeded, job.failed]
#   delay: 1s

expect:                     # what a correct client does (`fakeprovider check` judges it)
  outcome: succeeded
  deadline: 5m
  max_retries: 3
  retrievals: 1
"""


def starter(name: str) -> str:
    """The commented starter scenario called ``name``."""
    text = _STARTER.format(name=name, scalar=_scalar(name), dialects=", ".join(DIALECT_NAMES))
    parse_scenario(text, filename=f"<starter {name}>")  # a bug here if it does not validate
    return text


def _scalar(name: str) -> str:
    """``name`` as a YAML string: plain when it reads back as itself, else quoted."""
    return name if yaml.safe_load(name) == name else json.dumps(name)


_NAME_LINE = re.compile(r"^name:.*$", re.MULTILINE)


def copy_of(source: str, name: str) -> str:
    """The text of scenario ``source`` (a bundled name or a path), comments kept, renamed ``name``.

    Raises ``ScenarioError`` when ``source`` is neither a bundled scenario nor a valid file.
    """
    load_scenario(source)
    path = bundled_scenarios().get(source) or Path(source)
    text = path.read_text(encoding="utf-8")
    line = f"name: {_scalar(name)}"
    if _NAME_LINE.search(text):
        renamed = _NAME_LINE.sub(line, text, count=1)
    else:  # after the leading comments, before the first key
        head = re.match(r"(?:[ \t]*(?:#.*)?\n)*", text)
        cut = head.end() if head else 0
        renamed = f"{text[:cut]}{line}\n{text[cut:]}"
    parse_scenario(renamed, filename=f"<copy of {source}>")
    return renamed
