"""Hadoop configuration files (`core-site.xml`, `hdfs-site.xml`) as a test writes them."""

from __future__ import annotations

from pathlib import Path


def site(folder: Path, name: str, **properties: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(
        f"<property><name>{key}</name><value>{value}</value></property>"
        for key, value in properties.items()
    )
    (folder / name).write_text(f"<configuration>{rows}</configuration>")
