"""Writing a file on this machine: replaced, so that readers see the old content or the new,
never a part; or appended to, for readers that skip a line cut short."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from flink_sql_runner.errors import StoreError


def replace_file(path: Path, text: str | bytes, mode: int = 0o644) -> None:
    """Write `text` to a temporary file beside `path` and rename it over `path`: readers see
    the old or the new content, never a part. `mode` holds from the first byte. OSError on
    failure, with nothing left behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        data = text.encode("utf-8") if isinstance(text, str) else text
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_to(path: Path, data: bytes, head: bytes = b"") -> bool:
    """Append `data` to the file at `path` in one write, when the file begins with `head`;
    False when there is no such file (it is not made) or it begins otherwise. `head` is read
    through the descriptor written to: a file replaced meanwhile (`replace_file` renames over
    it) does not get `data`, the file it replaced does. A reader may see the data in part: for
    files whose readers skip a line cut short (the load cache)."""
    try:
        fd = os.open(path, (os.O_RDWR if head else os.O_WRONLY) | os.O_APPEND)
    except FileNotFoundError:
        return False
    try:
        if head and os.pread(fd, len(head), 0) != head:
            return False
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return True


def write_atomically(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace the file atomically (replace_file); StoreError on failure."""
    try:
        replace_file(path, text, mode)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror}") from None
