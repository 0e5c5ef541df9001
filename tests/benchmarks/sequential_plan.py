"""The baseline of the plan benchmark: the original tool's way, one job after another.

    python -m tests.benchmarks.sequential_plan --path JOBS --template FILE --store s3://B/P/

For each job file, in order: read its YAML, merge it over the template, read its stored manifest
from S3 (one boto3 client, one call at a time), and compare the two. It prints how many jobs
changed. It deliberately does less than `plan` (no jsonschema, no SQL parsing, no checkpoints, no
run registry): only the reads and a plain comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import boto3
import yaml

from tests.support.scratch import for_a_program

STORED_ONLY = ("schema-version", "tables", "meta")


def merged(template: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    out = {**template, **job}
    for key in ("sparkProperties", "metadata-columns"):
        if isinstance(template.get(key), dict) and isinstance(job.get(key), dict):
            out[key] = {**template[key], **job[key]}
    return out


def changed_fields(desired: dict[str, Any], stored: dict[str, Any] | None) -> list[str]:
    if stored is None:
        return ["(new)"]
    previous = {k: v for k, v in stored.items() if k not in STORED_ONLY}
    return sorted(k for k in desired.keys() | previous.keys() if desired.get(k) != previous.get(k))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, required=True)
    parser.add_argument("--template", type=Path, required=True)
    parser.add_argument("--store", required=True, help="s3://bucket/prefix/")
    args = parser.parse_args(argv)
    bucket, _, prefix = args.store.removeprefix("s3://").partition("/")
    client = boto3.client("s3")
    template = yaml.safe_load(args.template.read_text())
    changed = 0
    files = sorted(args.path.glob("*.yaml"))
    for path in files:
        job = merged(template, yaml.safe_load(path.read_text()))
        try:
            body = client.get_object(Bucket=bucket, Key=f"{prefix}{job['name']}.yaml")["Body"]
            stored = yaml.safe_load(body.read())
        except client.exceptions.NoSuchKey:
            stored = None
        changed += bool(changed_fields(job, stored))
    json.dump({"jobs": len(files), "changed": changed}, sys.stdout)
    return 0


if __name__ == "__main__":
    with for_a_program():
        sys.exit(main())
