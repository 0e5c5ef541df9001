"""`validate --output json`: one document, the valid jobs or every problem
(docs/reference/json.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from flink_sql_runner.read.manifest import Job


def validation_json(
    jobs: Sequence[Job], problems: Sequence[tuple[str, str, str]], hints: Sequence[str]
) -> str:
    """`ok` with the valid jobs' names, or not with every problem (`file`, `field`, `message`)
    and the hints; the relative paths of sources, as written, with the folder they resolve
    against."""
    relative = list(dict.fromkeys(written for job in jobs for _, written in job.relative))
    doc = {
        "ok": not problems,
        "jobs": [job.name for job in jobs],
        "problems": [dict(zip(("file", "field", "message"), p, strict=True)) for p in problems],
        "hints": list(hints),
        "relative-paths": relative,
        "resolved-against": str(jobs[0].base) if relative else None,
    }
    return json.dumps(doc, indent=2)
