"""A parquet file's last bytes as Spark writes them, made without Spark for the fast tests:
a FileMetaData in Thrift's compact protocol with the fields Spark's files have around the one the
plan reads (runner/parquet_footer.py), its length and `PAR1`."""

from __future__ import annotations

import json
import struct
from typing import Any

SPARK_KEY = "org.apache.spark.sql.parquet.row.metadata"


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def zigzag(n: int) -> bytes:
    return varint((n << 1) ^ (n >> 63))


def binary(data: bytes) -> bytes:
    return varint(len(data)) + data


def key_value(key: str, value: str | None) -> bytes:
    out = bytes([0x18]) + binary(key.encode())  # field 1, binary
    if value is not None:
        out += bytes([0x18]) + binary(value.encode())  # field 2 (delta 1), binary
    return out + b"\x00"


def file_metadata(pairs: list[tuple[str, str | None]]) -> bytes:
    """FileMetaData: version (1), a schema list of one element (2), num_rows (3), an empty row
    group list (4), the key-value list (5), created_by (6)."""
    schema_element = bytes([0x48]) + binary(b"spark_schema") + bytes([0x15]) + zigzag(0) + b"\x00"
    out = bytes([0x15]) + zigzag(1)  # 1: i32 version
    out += bytes([0x19, 0x1C]) + schema_element  # 2: list<struct> of 1
    out += bytes([0x16]) + zigzag(3)  # 3: i64 num_rows
    out += bytes([0x19, 0x0C])  # 4: list<struct> of 0
    size = len(pairs)
    header = bytes([(size << 4) | 0x0C]) if size < 15 else bytes([0xFC]) + varint(size)
    out += bytes([0x19]) + header + b"".join(key_value(k, v) for k, v in pairs)  # 5
    out += bytes([0x18]) + binary(b"parquet-mr version 1.13.1")  # 6: created_by
    return out + b"\x00"


def tail(schema: dict[str, Any] | str | None, data: bytes = b"PAR1rows") -> bytes:
    """A file's bytes with Spark's schema (None: a file written by another tool)."""
    pairs: list[tuple[str, str | None]] = [("org.apache.spark.version", "4.3.0")]
    if schema is not None:
        pairs.append((SPARK_KEY, schema if isinstance(schema, str) else json.dumps(schema)))
    footer = file_metadata(pairs)
    return data + footer + struct.pack("<I", len(footer)) + b"PAR1"


def struct_of(*fields: tuple[str, Any, bool]) -> dict[str, Any]:
    return {
        "type": "struct",
        "fields": [
            {"name": n, "type": t, "nullable": nullable, "metadata": {}}
            for n, t, nullable in fields
        ],
    }
