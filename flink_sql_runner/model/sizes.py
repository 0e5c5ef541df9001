"""Byte counts as people read them, as `forget` lists what it deletes and `inspect` the bytes
a state store takes."""

from __future__ import annotations


def human_size(size: int) -> str:
    """`512 B`, `3.4 KiB`, `1.2 MiB`, ..."""
    if size < 1024:
        return f"{size} B"
    value, units = size / 1024, ["KiB", "MiB", "GiB", "TiB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{value:.1f} {units[0]}"
