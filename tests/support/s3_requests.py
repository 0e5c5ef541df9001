"""Counting what an S3 client asks: every HTTP request it sends (retries too)."""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


class Requests:
    """Every HTTP request a client sends (retries too), as (operation, key or listed prefix);
    those sent by threads whose names begin with `apart` kept apart (`take(apart=True)`)."""

    def __init__(self, client: Any, bucket: str, apart: str | None = None) -> None:
        self.bucket, self.apart = bucket, apart
        self.sent: list[tuple[str, str]] = []
        self.sent_apart: list[tuple[str, str]] = []
        client.meta.events.register("before-send.s3", self._send)

    def _send(self, event_name: str, request: Any, **_: Any) -> None:
        url = urlsplit(request.url)
        where = unquote(url.path).removeprefix(f"/{self.bucket}").lstrip("/")
        where = where or parse_qs(url.query).get("prefix", [""])[0]
        thread = threading.current_thread().name
        apart = self.apart is not None and thread.startswith(self.apart)
        (self.sent_apart if apart else self.sent).append((event_name.rsplit(".", 1)[-1], where))

    def take(self, apart: bool = False) -> list[tuple[str, str]]:
        if apart:
            sent, self.sent_apart = self.sent_apart, []
        else:
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
