"""Reading the S3 lock: the holder of the very text read last time is not parsed again (a waiter
reads the same lock every second until its holder renews it)."""

from __future__ import annotations

from typing import Any

from flink_sql_runner.stores import lock as lock_module
from flink_sql_runner.stores.lock import Holder
from flink_sql_runner.stores.s3_lock import S3LockBackend


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self) -> bytes:
        return self.data


class _Client:
    """The one call `read` makes: the lock's text as it is now, under an ETag per text."""

    def __init__(self) -> None:
        self.text = ""

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        return {"Body": _Body(self.text.encode()), "ETag": f'"{len(self.text)}"'}


def test_the_holder_of_the_text_read_last_is_not_parsed_again(monkeypatch: Any) -> None:
    parsed: list[str] = []
    parse = Holder.from_json

    def counting(text: str) -> Holder | None:
        parsed.append(text)
        return parse(text)

    monkeypatch.setattr(lock_module.Holder, "from_json", staticmethod(counting))
    client = _Client()
    backend = S3LockBackend(client, "b", "_lock.json")
    first = Holder("o1", "h", 1, "deploy", "2026-01-01T00:00:00Z", 60.0)
    client.text = first.to_json()
    assert backend.read() == (first, f'"{len(client.text)}"')
    assert backend.read()[0] is backend.read()[0] and len(parsed) == 1
    renewed = first.renewed()
    client.text = renewed.to_json()
    assert backend.read()[0] == renewed and len(parsed) == 2
    client.text = "not a lock"
    assert backend.read()[0] is None and len(parsed) == 3
