"""The schema Spark wrote into a parquet file's footer, read without Spark.

Spark's parquet writer keeps its own schema as JSON in the footer's key-value metadata
(`org.apache.spark.sql.parquet.row.metadata`, Spark 3.5 and 4.x), and its reader takes the file's
schema from there when it is present, then makes every column nullable (a file source's data
schema is read `asNullable`). So the plan can tell what the newest file of a sink holds from the
file's last bytes, in Python, where it would otherwise start a JVM for one footer.

A parquet file ends with its footer (a Thrift compact-protocol `FileMetaData`), the footer's
length (4 bytes, little-endian) and `PAR1`. Only what this needs is decoded: the key-value list
(`FileMetaData` field 5, `KeyValue` fields 1 and 2); every other field is skipped by its type.
Anything this reader does not understand, or a file Spark did not write, gives None: Spark reads
it then (tests/runner/test_parquet_footer.py holds the two readers equal on files Spark wrote).
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any

from .schema_rules import Field, fields_of

SPARK_SCHEMA_KEY = "org.apache.spark.sql.parquet.row.metadata"
MAGIC = b"PAR1"
#: Footers larger than this are left to Spark (a footer of many row groups and columns; the
#: plan reads at most this many bytes of a file).
MAX_FOOTER = 16 * 1024 * 1024
#: How deep structures may nest before the footer is taken as not understood.
_MAX_DEPTH = 64

# Thrift compact protocol's type ids.
_TRUE, _FALSE, _I8, _I16, _I32, _I64, _DOUBLE, _BINARY = 1, 2, 3, 4, 5, 6, 7, 8
_LIST, _SET, _MAP, _STRUCT, _UUID = 9, 10, 11, 12, 13


class NotUnderstood(Exception):
    """A footer this reader does not decode: Spark reads the file instead."""


def footer_length(tail: bytes) -> int | None:
    """The footer's length from a file's last 8 bytes; None for a file that is no plain parquet
    (an encrypted footer ends with `PARE`)."""
    if len(tail) < 8 or tail[-4:] != MAGIC:
        return None
    (length,) = struct.unpack("<I", tail[-8:-4])
    return length


def spark_schema_json(tail: bytes) -> str | None:
    """Spark's schema JSON kept in the footer, from bytes that end the file and hold the whole
    footer; None when the footer keeps none or is not understood. A key written twice is read
    as parquet-mr reads it: its last value."""
    length = footer_length(tail)
    if length is None or length > MAX_FOOTER or length + 8 > len(tail):
        return None
    footer = tail[len(tail) - 8 - length : len(tail) - 8]
    try:
        return dict(_key_values(_Reader(footer))).get(SPARK_SCHEMA_KEY)
    except (NotUnderstood, IndexError, UnicodeDecodeError, struct.error):
        return None


def spark_read_fields(tail: bytes) -> list[Field] | None:
    """The fields Spark's reader gives for the file these bytes end (a file directly in the
    folder it is read from: no partition columns), or None: Spark must read it. Only a schema
    Spark reads as it is written: types by the names Spark's JSON gives them, and no two
    columns of one struct whose names are equal but for case (Spark's file source refuses
    them)."""
    text = spark_schema_json(tail)
    if text is None:
        return None
    try:
        schema = json.loads(text)
        if not _is_struct(schema, 0):
            return None
        return [{**field, "nullable": True} for field in fields_of(schema)]
    except (ValueError, RecursionError):
        return None  # Spark would parse an old string form, or fall back to the parquet schema


#: Type names as Spark's schema JSON writes them (DataType.json), each read back as itself.
_SIMPLE = frozenset(
    ("boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary")
    + ("date", "timestamp", "timestamp_ntz", "variant")
)
_DECIMAL = re.compile(r"decimal\(\d{1,2},\d{1,2}\)")
_INTERVAL = re.compile(r"interval (day|hour|minute|second)( to (hour|minute|second))?"
                       r"|interval (year|month)( to month)?")  # fmt: skip
_COLLATED = re.compile(r"string collate [A-Za-z0-9_]+")


def _is_struct(value: Any, depth: int) -> bool:
    """A schema JSON this module reads as Spark does: a struct of named fields with types,
    their names distinct but for case."""
    if depth > _MAX_DEPTH or not isinstance(value, dict) or value.get("type") != "struct":
        return False
    fields = value.get("fields")
    if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
        return False
    names = [f.get("name") for f in fields]
    if not all(isinstance(n, str) for n in names) or len({n.lower() for n in names}) < len(names):
        return False
    return all(_is_type(f.get("type"), depth + 1) for f in fields)


def _is_type(value: Any, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(value, str):
        return value in _SIMPLE or any(p.fullmatch(value) for p in (_DECIMAL, _INTERVAL, _COLLATED))
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if kind == "struct":
        return _is_struct(value, depth)
    if kind == "array":
        return _is_type(value.get("elementType"), depth + 1)
    if kind == "map":
        return _is_type(value.get("keyType"), depth + 1) and _is_type(
            value.get("valueType"), depth + 1
        )
    return False  # a user-defined type, or one this reader does not know: Spark reads it


def _key_values(reader: _Reader) -> list[tuple[str, str | None]]:
    """FileMetaData's key_value_metadata (field 5: a list of KeyValue structs)."""
    found: list[tuple[str, str | None]] = []
    for field, kind in reader.fields():
        if field == 5 and kind == _LIST:
            element, size = reader.collection()
            if element != _STRUCT:
                raise NotUnderstood("key_value_metadata is no list of structs")
            for _ in range(size):
                found.append(_key_value(reader))
        else:
            reader.skip(kind)
    return found


def _key_value(reader: _Reader) -> tuple[str, str | None]:
    key: str | None = None
    value: str | None = None
    for field, kind in reader.fields():
        if field in (1, 2) and kind == _BINARY:
            text = reader.binary().decode("utf-8")
            key, value = (text, value) if field == 1 else (key, text)
        else:
            reader.skip(kind)
    if key is None:
        raise NotUnderstood("a KeyValue without its key")
    return key, value


class _Reader:
    """Thrift's compact protocol over bytes, read forward."""

    def __init__(self, data: bytes):
        self.data = data
        self.at = 0
        self.depth = 0

    def byte(self) -> int:
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise NotUnderstood("a varint longer than 64 bits")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        size = self.varint()
        if self.at + size > len(self.data):
            raise NotUnderstood("a binary past the footer's end")
        value = self.data[self.at : self.at + size]
        self.at += size
        return value

    def fields(self) -> Any:
        """(field id, type) of each field of the struct read next, up to its stop byte; the
        caller reads or skips each value."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise NotUnderstood("structures nested too deep")
        last = 0
        while True:
            header = self.byte()
            if header == 0:
                self.depth -= 1
                return
            delta, kind = header >> 4, header & 0x0F
            last = last + delta if delta else self.zigzag()
            yield last, kind

    def collection(self) -> tuple[int, int]:
        """(element type, size) of a list or set."""
        header = self.byte()
        size = header >> 4
        if size == 15:
            size = self.varint()
        if size > len(self.data) - self.at:
            raise NotUnderstood("a list longer than the footer")
        return header & 0x0F, size

    def skip(self, kind: int, in_collection: bool = False) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise NotUnderstood("values nested too deep")
        self._skip(kind, in_collection)
        self.depth -= 1
        if self.at > len(self.data):
            raise NotUnderstood("a value past the footer's end")

    def _skip(self, kind: int, in_collection: bool) -> None:
        if kind in (_TRUE, _FALSE):
            if in_collection:
                self.at += 1  # a collection's booleans take a byte each
        elif kind == _I8:
            self.at += 1
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.at += 8
        elif kind == _UUID:
            self.at += 16
        elif kind == _BINARY:
            self.binary()
        elif kind in (_LIST, _SET):
            element, size = self.collection()
            for _ in range(size):
                self.skip(element, True)
        elif kind == _MAP:
            size = self.varint()
            if size > len(self.data) - self.at:
                raise NotUnderstood("a map longer than the footer")
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4, True)
                    self.skip(types & 0x0F, True)
        elif kind == _STRUCT:
            for _, inner in self.fields():
                self.skip(inner)
        else:
            raise NotUnderstood(f"a field of unknown type {kind}")
