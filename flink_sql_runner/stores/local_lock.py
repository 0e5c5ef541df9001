"""The store lock on a local folder: a `.lock` file created exclusively (lock.py has the lease)."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from flink_sql_runner.stores.lock import Holder


class FileLockBackend:
    def __init__(self, path: Path):
        self.path = path
        self.location = str(path)

    def create(self, holder: Holder) -> Any:
        """Write the holder to a temporary file, then hard-link it into place: the lock file
        appears complete or not at all, and only if it did not exist."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = holder.to_json()
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                return None
            return self.path.stat().st_mtime_ns, text
        finally:
            os.unlink(tmp)

    def read(self) -> tuple[Holder | None, Any]:
        try:
            text = self.path.read_text()
            token = self.path.stat().st_mtime_ns, text
        except FileNotFoundError:
            return None, None
        return Holder.from_json(text), token

    def replace(self, holder: Holder, token: Any) -> Any:
        # Take the old file away atomically; whoever renames it first wins.
        claim = self.path.with_name(f"{self.path.name}.{holder.owner}.{uuid.uuid4().hex[:8]}")
        try:
            os.rename(self.path, claim)
        except FileNotFoundError:
            return None
        if (claim.stat().st_mtime_ns, claim.read_text()) != token:
            os.rename(claim, self.path)  # not the version we judged; put it back
            return None
        claim.unlink()
        return self.create(holder)

    def delete(self, token: Any) -> None:
        _, current = self.read()
        if current == token:
            self.path.unlink(missing_ok=True)
