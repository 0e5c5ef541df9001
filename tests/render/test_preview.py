"""A preview as text, JSON and Markdown (render/preview.py): what people read of it."""

from __future__ import annotations

import json

from flink_sql_runner.decide.decisions import Action, Decision, Plan
from flink_sql_runner.decide.preview import judge_preview
from flink_sql_runner.model.preview import PreviewFacts, Slice, SlicePart
from flink_sql_runner.render.markdown import plan_markdown
from flink_sql_runner.render.preview import (
    preview_json,
    preview_markdown,
    preview_text,
    previews_markdown,
)

FIELDS = [{"name": "order_id", "type": "bigint", "nullable": True},
          {"name": "note", "type": "string", "nullable": True}]  # fmt: skip


def previewed():
    part = SlicePart("orders", "files", files=("file:///in/a.json", "file:///in/b.json"))
    answer = {
        "spark": "4.3.0",
        "inputs": {"orders": 3},
        "old": {"fields": FIELDS, "rows": [[1, "a"]]},
        "new": {"fields": FIELDS, "rows": [[1, "a"], [2, "x | `y` <b>"]]},
    }
    facts = PreviewFacts("expensive", 1, 2, Slice(1, 3, 12, (part,)), answer)
    return judge_preview(facts, rows=5)


def test_text_says_what_went_in_and_what_only_the_new_query_writes() -> None:
    shown = preview_text(previewed())
    assert shown.splitlines()[:4] == [
        "preview of expensive: version 1 -> 2",
        "  input: batches 3..12 of version 1",
        "    orders: 2 file(s)",
        "  rows in: orders 3",
    ]
    assert "  1 row(s) only the new query writes; 0 only the old one wrote" in shown
    assert "    order_id=2, note=x | `y` <b>" in shown
    assert shown.endswith("nothing was written")


def test_json_holds_the_counts_and_samples() -> None:
    doc = json.loads(preview_json([previewed()]))["previews"][0]
    assert doc["only-new"] == {"rows": 1, "sample": [{"order_id": 2, "note": "x | `y` <b>"}]}
    assert doc["old"]["rows-out"] == 1 and doc["new"]["rows-out"] == 2
    assert doc["slice"]["parts"][0]["files"] == ["file:///in/a.json", "file:///in/b.json"]


def test_markdown_is_a_collapsed_section_with_values_escaped() -> None:
    lines = preview_markdown(previewed(), rows=True)
    assert lines[1].startswith("<details><summary>Preview of expensive: 1 row(s) only")
    assert lines[-1] == "</details>"
    assert "| `2` | `x \\| 'y' <b>` |" in lines, "no table cut, no HTML let through"
    plan = Plan((Decision("expensive", Action.STOP_AND_START_CLEAN, 2, "query changed"),))
    shown = plan_markdown(plan, None, previews=previews_markdown([previewed()], rows=True))
    assert "#### Previews" in shown and "<details><summary>Preview of expensive" in shown
    assert "#### Previews" not in plan_markdown(plan, None), "only with --preview"


def test_previews_too_long_for_a_comment_are_left_out_saying_so() -> None:
    plan = Plan((Decision("expensive", Action.STOP_AND_START_CLEAN, 2, "query changed"),))
    shown = plan_markdown(plan, None, previews=["x" * 70_000])
    assert "x" * 100 not in shown
    assert "The previews are left out: the comment would be too long" in shown


def test_markdown_for_a_pull_request_shows_rows_only_when_asked_secret_columns_masked() -> None:
    """Issue 54, finding 14 (f): production rows reach a pull request only with
    `--preview-rows`, and a column a secret's name names is masked even then."""
    secret = [*FIELDS, {"name": "api_token", "type": "string", "nullable": True}]
    old = [[1, "a", "tok-old-1"]]
    answer = {"spark": "4.3.0", "inputs": {"orders": 2},
              "old": {"fields": secret, "rows": old},
              "new": {"fields": secret, "rows": [*old, [2, "b", "tok-2"]]}}  # fmt: skip
    part = SlicePart("orders", "files", files=("file:///in/a.json",))
    found = judge_preview(PreviewFacts("expensive", 1, 2, Slice(1, 3, 12, (part,)), answer), 5)
    counts = "\n".join(preview_markdown(found))
    assert "1 row(s) only the new query writes" in counts
    assert "tok-" not in counts and "`b`" not in counts and "min" not in counts
    assert "--preview-rows" in counts, "it says how rows are shown"
    rows = "\n".join(preview_markdown(found, rows=True))
    assert "`b`" in rows and "tok-" not in rows and "`*****`" in rows
    assert "tok-" not in "\n".join(previews_markdown([found], rows=True))


def test_the_summary_reads_as_written_and_holds_no_html() -> None:
    """The summary is in a block of HTML, where Markdown's escapes are not read: GitHub showed
    `order\\_id` for a key column `order_id`. Escaped as HTML, it reads as written, and text
    that would be a tag is text."""
    key = ("order_id",)
    answer = {"spark": "4.3.0", "inputs": {"orders": 1},
              "old": {"fields": FIELDS, "rows": [[1, "a"]]},
              "new": {"fields": FIELDS, "rows": [[1, "<b>b</b>"]]}}  # fmt: skip
    part = SlicePart("orders", "files", files=("file:///in/a.json",))
    found = judge_preview(PreviewFacts("x_y", 1, 2, Slice(1, 3, 12, (part,)), answer, key=key), 5)
    summary = preview_markdown(found)[1]
    assert summary == (
        "<details><summary>Preview of x_y: 0 row(s) only the new query writes; 0 only the old "
        "one wrote; 1 changed by order_id</summary>"
    )
    failed = {**answer, "new": {"error": "no <img src=x onerror=alert(1)> & co"}}
    found = judge_preview(PreviewFacts("x_y", 1, 2, Slice(1, 3, 12, (part,)), failed), 5)
    assert preview_markdown(found, rows=True)[1] == (
        "<details><summary>Preview of x_y: the new query failed on the slice: no &lt;img "
        "src=x onerror=alert(1)&gt; &amp; co</summary>"
    )


CAST_ERROR = (
    "[CAST_INVALID_INPUT] The value 'sk-live-9f8e7d6c5b4a' of the type \"STRING\" cannot be cast "
    'to "INT" because it is malformed. Correct the value as per the syntax, or change its target '
    "type. Use `try_cast` to tolerate malformed input and return NULL instead. SQLSTATE: 22018\n"
    "== SQL (line 1, position 18) ==\nSELECT order_id, CAST(api_token AS INT) AS t FROM orders"
)


def test_markdown_without_rows_shows_a_failed_querys_error_class_not_its_values() -> None:
    """Review of issue 54, P4: Spark's error text quotes the row it failed on; a pull request
    gets it only with `--preview-rows`. Without, the error's class and SQLSTATE, and where the
    whole text is; an error without a class has its quoted literals masked."""
    part = SlicePart("orders", "files", files=("file:///in/a.json",))
    old = {"fields": FIELDS, "rows": [[1, "a"]]}
    answer = {"spark": "4.3.0", "inputs": {"orders": 1}, "old": old, "new": {"error": CAST_ERROR}}
    found = judge_preview(PreviewFacts("tok", 1, 2, Slice(1, 3, 12, (part,)), answer), 5)
    counts = "\n".join(preview_markdown(found)).replace("\\", "")
    assert "sk-live" not in counts and "api_token" not in counts
    assert (
        "the new query failed on the slice: [CAST_INVALID_INPUT] SQLSTATE: 22018 "
        "(`flink-sql-runner preview tok` shows the whole error)" in counts
    )
    assert "sk-live" not in "\n".join(previews_markdown([found])), "plan --preview too"
    assert "sk-live-9f8e7d6c5b4a" in "\n".join(preview_markdown(found, rows=True))
    assert "sk-live-9f8e7d6c5b4a" in preview_text(found), "the whole error where rows are shown"
    bare = {**answer, "new": {"error": "ValueError: invalid literal for int(): 'sk-live-2'"}}
    found = judge_preview(PreviewFacts("tok", 1, 2, Slice(1, 3, 12, (part,)), bare), 5)
    counts = "\n".join(preview_markdown(found)).replace("\\", "")
    assert "sk-live" not in counts
    assert "ValueError: invalid literal for int(): '*****'" in counts
    broken = {"spark": "4.3.0", "error": 'Malformed records: "{api_token: sk-live-3}"'}
    found = judge_preview(PreviewFacts("tok", 1, 2, Slice(1, 3, 12, (part,)), broken), 5)
    assert found.unavailable is not None and "sk-live-3" in found.unavailable
    assert "sk-live" not in "\n".join(preview_markdown(found))


def test_secrets_in_rows_are_masked_at_any_depth_in_every_format() -> None:
    """Review of issue 54, P7: a secret-named field inside a struct, and a secret-named
    column's values in samples, changed rows and its min and max, are masked in text, JSON and
    Markdown alike (read/secrets.py `mask`)."""
    fields = [{"name": "id", "type": "bigint", "nullable": True},
              {"name": "creds", "type": "struct<user:string,password:string>", "nullable": True},
              {"name": "api_token", "type": "string", "nullable": True},
              {"name": "note", "type": "string", "nullable": True}]  # fmt: skip
    old = [[1, {"user": "u", "password": "hunter2-OLD"}, "tok-OLD-1", "db password=hunter2-P"]]
    new = [[1, {"user": "u", "password": "hunter2-NESTED"}, "tok-NEW-1", "x"],
           [2, {"user": "v", "password": "hunter2-NESTED-2"}, "tok-NEW-2", "y"]]  # fmt: skip
    sides = {"old": {"fields": fields, "rows": old}, "new": {"fields": fields, "rows": new}}
    answer = {"spark": "4.3.0", "inputs": {"orders": 2}, **sides}
    part = SlicePart("orders", "files", files=("file:///in/a.json",))
    found = judge_preview(
        PreviewFacts("j", 1, 2, Slice(1, 3, 12, (part,)), answer, key=("id",)), rows=5
    )
    assert (found.only_new, found.only_old, found.changed) == (1, 0, 1)
    assert {c.name for c in found.columns} >= {"api_token", "creds", "note"}
    shown = {
        "text": preview_text(found),
        "json": preview_json([found]),
        "markdown": "\n".join(preview_markdown(found, rows=True)),
        "plan markdown": "\n".join(previews_markdown([found], rows=True)),
    }
    for form, out in shown.items():
        for secret in ("hunter2", "tok-"):
            assert secret not in out, (form, secret)
    doc = json.loads(shown["json"])["previews"][0]
    assert doc["only-new"]["sample"] == [
        {"id": 2, "creds": {"user": "v", "password": "*****"}, "api_token": "*****", "note": "y"}
    ]
    (changed,) = doc["changed"]["sample"]
    assert changed["columns"]["api_token"] == ["*****", "*****"]
    assert changed["columns"]["note"] == ["*****", "x"], "a value assigning a secret"
    (token,) = [c for c in doc["columns"] if c["name"] == "api_token"]
    assert (token["new"]["min"], token["new"]["max"], token["new"]["distinct"]) == (
        "*****", "*****", 2)  # fmt: skip
