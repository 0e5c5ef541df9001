"""The example jobs of examples/, as the CLI tests read and deploy them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.support.cli import REPO

EXAMPLES = ["--path", "examples/queries", "--table-definition-path", "examples/tables"]


EXAMPLE_JOBS = ["buyer-orders-code", "expensive-orders", "order-stats", "tick-log"]


def stored_examples_with(tmp_path: Path, **changed: dict[str, Any]) -> Path:
    """A manifest store holding the examples named in `changed` as deployed (v1), with those
    fields changed; a query change starts clean, so no checkpoint is needed."""
    from flink_sql_runner.model.stored import Meta, StoredManifest
    from flink_sql_runner.read.catalog import load_catalog
    from flink_sql_runner.read.manifest import load_jobs
    from flink_sql_runner.stores.local import LocalStore

    catalog = load_catalog([REPO / "examples" / "tables"])
    state = Path(os.environ["FLINK_SQL_RUNNER_STATE_DIR"])  # the state folder the CLI uses here
    store = LocalStore(tmp_path / "store")
    for job in load_jobs([REPO / "examples" / "queries"], None, catalog, state):
        if job.name not in changed:
            continue
        store.write(
            StoredManifest({**job.spec, **changed.get(job.name, {})}, job.tables, Meta.new(1)),
            None,
        )
    return tmp_path / "store"


#: The examples with the pipeline's jobs and tables too.
ALL_EXAMPLES = [
    "--path",
    "examples/queries",
    "--path",
    "examples/pipeline/queries",
    "--table-definition-path",
    "examples/tables",
    "examples/pipeline/tables",
]
