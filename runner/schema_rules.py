"""What a new output schema does to the readers of a sink: the one set of rules, checked by the
plan (the deployer imports this module) and by a run before its first write.

Pure Python, no Spark: a schema is a list of fields `{"name", "type", "nullable"}` with the type
as Spark's `simpleString` ("bigint", "decimal(10,2)", "struct<a:int>"), as `fields_of` makes from
Spark's own schema JSON (`StructType.jsonValue()`, the JSON a parquet footer keeps).

A sink's readers read the files every version wrote. What they cannot read as before is
breaking: a column whose type changed (Spark's parquet reader fails on the old files for good:
`SchemaColumnConvertNotSupportedException`), a column dropped or renamed (readers selecting it),
and for positional formats (csv, text) a column moved. A new nullable column is additive: files
without it read as null. A new NOT NULL column is not, in formats that keep nullability (parquet,
orc): Spark writes it as `required` in the footer, and reading the older files, which lack it,
fails ("Required column is missing in data file", Spark 4.3 reading a streaming sink).
Otherwise nullability is not compared. Names are compared as Spark resolves them by default,
case-insensitively.
"""

from __future__ import annotations

from typing import Any

Field = dict[str, Any]

#: Formats whose readers find columns by position, not by name.
POSITIONAL_FORMATS = ("csv", "text")
#: Formats whose files keep no nullability: a new NOT NULL column is additive there.
NULLABLE_FORMATS = ("json", "csv", "text")
#: The column a Kafka source gives with `includeHeaders` true (Spark's
#: KafkaRecordToRowConverter.headersType), after its fixed ones.
KAFKA_HEADERS = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"

_PRIMITIVE = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}


def type_text(data_type: Any) -> str:
    """Spark's `simpleString` of a type given as Spark's schema JSON."""
    if isinstance(data_type, str):
        return _PRIMITIVE.get(data_type, data_type)
    kind = data_type.get("type")
    if kind == "struct":
        inner = ",".join(f"{f['name']}:{type_text(f['type'])}" for f in data_type["fields"])
        return f"struct<{inner}>"
    if kind == "array":
        return f"array<{type_text(data_type['elementType'])}>"
    if kind == "map":
        return f"map<{type_text(data_type['keyType'])},{type_text(data_type['valueType'])}>"
    if kind == "udt":
        return type_text(data_type.get("sqlType", "binary"))
    return str(kind)


def fields_of(struct: dict[str, Any]) -> list[Field]:
    """Fields from Spark's schema JSON (`{"type": "struct", "fields": [...]}`)."""
    return [
        {"name": f["name"], "type": type_text(f["type"]), "nullable": bool(f.get("nullable", True))}
        for f in struct.get("fields", [])
    ]


def _key(name: str) -> str:
    return name.lower()


def compare(history: list[list[Field]], new: list[Field], fmt: str | None = None) -> dict[str, Any]:
    """What writing `new` does to a sink whose files were written with the schemas of
    `history`, oldest first (empty: nothing written yet).

    Against the newest schema: columns added, dropped, renamed (a dropped and an added column of
    one type at one position), retyped, and for positional formats moved. A column of an older
    schema that the newest no longer has and `new` brings back with another type is retyped too:
    the old files still hold it; one it brings back with its type is not added, unless NOT
    NULL. `required` names the added columns that are NOT NULL where the format keeps
    nullability (breaking: see the module's docstring). Returns the lists and
    `verdict`: `same`, `additive` or `breaking`."""
    found: dict[str, Any] = {
        "added": [],
        "dropped": [],
        "renamed": [],
        "retyped": [],
        "moved": [],
        "required": [],
    }
    if not history:
        found["verdict"] = "same"
        return found
    newest = history[-1]
    old_by = {_key(f["name"]): f for f in newest}
    new_by = {_key(f["name"]): f for f in new}
    dropped = [f for f in newest if _key(f["name"]) not in new_by]
    added = [f for f in new if _key(f["name"]) not in old_by]
    for gone in list(dropped):
        at = newest.index(gone)
        twin = new[at] if at < len(new) else None
        if twin in added and twin["type"] == gone["type"]:
            found["renamed"].append(
                {"from": gone["name"], "to": twin["name"], "type": gone["type"]}
            )
            dropped.remove(gone)
            added.remove(twin)
    older = {}
    for schema in history[:-1]:
        for f in schema:
            older.setdefault(_key(f["name"]), f)
    for f in new:
        before = old_by.get(_key(f["name"])) or older.get(_key(f["name"]))
        if before is not None and before["type"] != f["type"]:
            found["retyped"].append({"name": f["name"], "from": before["type"], "to": f["type"]})
            if f in added:
                added.remove(f)
    keeps_nulls = fmt not in NULLABLE_FORMATS
    # A column an older version wrote is not new to the readers, unless it comes back NOT NULL
    # where the format keeps nullability: the newest files lack it, as any older files would.
    added = [
        f
        for f in added
        if _key(f["name"]) not in older or (keeps_nulls and not f.get("nullable", True))
    ]
    if fmt in POSITIONAL_FORMATS:
        kept_old = [_key(f["name"]) for f in newest if _key(f["name"]) in new_by]
        kept_new = [_key(f["name"]) for f in new if _key(f["name"]) in old_by]
        # A reader finds each column of the old files at its old position: a column inserted
        # before it, not only a reordering, makes the reader read it as another.
        at_old = {_key(f["name"]): i for i, f in enumerate(newest)}
        shifted = any(
            at_old[_key(f["name"])] != i for i, f in enumerate(new) if _key(f["name"]) in at_old
        )
        if kept_old != kept_new or shifted or (added and len(new) - len(added) < len(newest)):
            found["moved"] = [f["name"] for f in new if _key(f["name"]) in old_by]
    found["added"], found["dropped"] = added, dropped
    if keeps_nulls:
        found["required"] = [f["name"] for f in added if not f.get("nullable", True)]
    if any(found[k] for k in ("dropped", "renamed", "retyped", "moved", "required")):
        found["verdict"] = "breaking"
    elif found["added"]:
        found["verdict"] = "additive"
    else:
        found["verdict"] = "same"
    return found


def reader_conflicts(declared: list[Field], new: list[Field]) -> list[str]:
    """What a reader that declares the columns `declared` cannot read in `new`: each declared
    column missing, or of another type, in words."""
    new_by = {_key(f["name"]): f for f in new}
    problems = []
    for f in declared:
        got = new_by.get(_key(f["name"]))
        if got is None:
            problems.append(f"{f['name']} ({f['type']}) is not written")
        elif got["type"] != f["type"]:
            problems.append(f"{f['name']} is written as {got['type']}, declared {f['type']}")
    return problems


def kafka_headers(options: dict[str, Any]) -> bool:
    """Whether a Kafka source with these options gives the `headers` column: `includeHeaders`
    true, its key matched without case and its value read as Spark reads it (YAML's true is
    "true")."""
    return any(
        str(key).lower() == "includeheaders" and str(value).lower() == "true"
        for key, value in options.items()
    )


def kafka_conflicts(new: list[Field]) -> list[str]:
    """What Spark's Kafka sink refuses in `new`: a `value` column, and `key` if present, of
    type string or binary."""
    by = {_key(f["name"]): f for f in new}
    problems = []
    for name, required in (("value", True), ("key", False)):
        got = by.get(name)
        if got is None:
            if required:
                problems.append("no `value` column (Kafka's sink needs one, string or binary)")
        elif got["type"] not in ("string", "binary"):
            problems.append(f"`{name}` is {got['type']}; Kafka's sink takes string or binary")
    return problems


def describe(found: dict[str, Any]) -> str:
    """The change in words: `value bigint -> string; dropped: price (double)`."""
    parts = [f"{r['name']} {r['from']} -> {r['to']}" for r in found["retyped"]]
    if found["dropped"]:
        parts.append(
            "dropped: " + ", ".join(f"{f['name']} ({f['type']})" for f in found["dropped"])
        )
    parts += [f"renamed: {r['from']} -> {r['to']}" for r in found["renamed"]]
    if found["moved"]:
        parts.append("columns moved: " + ", ".join(found["moved"]))
    required = found.get("required", [])
    strict = [f for f in found["added"] if f["name"] in required]
    loose = [f for f in found["added"] if f["name"] not in required]
    if strict:
        parts.append(
            "added NOT NULL, which the older files lack: "
            + ", ".join(f"{f['name']} ({f['type']})" for f in strict)
        )
    if loose:
        parts.append("added: " + ", ".join(f"{f['name']} ({f['type']})" for f in loose))
    return "; ".join(parts) or "no change"
