"""A hostile review of issue 55, item 4 (one --output, one JSON document, one time format, the
renamed options' spellings before, --path's own check, the generated reference). Each test here
shows one defect and is expected to FAIL until it is fixed; none starts Spark."""

from __future__ import annotations

from flink_sql_runner.cli.main import all_commands

COMMANDS = all_commands()
