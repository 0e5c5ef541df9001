"""Counting what an S3 client asks: every HTTP request it sends (retries too)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


class Requests:
    """Every HTTP request a client sends (retries too), as (operation, key or listed prefix)."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.bucket, self.sent = bucket, []
        client.meta.events.register("before-send.s3", self._send)

    def _send(self, event_name: str, request: Any, **_: Any) -> None:
        url = urlsplit(request.url)
        where = unquote(url.path).removeprefix(f"/{self.bucket}").lstrip("/")
        where = where or parse_qs(url.query).get("prefix", [""])[0]
        self.sent.append((event_name.rsplit(".", 1)[-1], where))

    def take(self) -> list[tuple[str, str]]:
        sent, self.sent = self.sent, []
        return sent


def parsed_pages(monkeypatch: Any) -> list[int]:
    """From now on, the number of keys of each listing page the light parse reads
    (stores/s3_listing.py), -1 for one it leaves to botocore."""
    from flink_sql_runner.stores import s3_listing

    parsed: list[int] = []
    real = s3_listing.parse_listing

    def counted(body: bytes) -> Any:
        page = real(body)
        parsed.append(len(page.keys) if page else -1)
        return page

    monkeypatch.setattr(s3_listing, "parse_listing", counted)
    return parsed
