"""How the runner says what went wrong: Spark's own message, and a manifest it cannot use."""

from __future__ import annotations

#: Failures seen inside foreachBatch, whose real message Spark wraps beyond recognition.
FAILURES: list[str] = []


class BadManifest(Exception):
    """The runtime manifest cannot be used; exit code 2."""


def error_text(exc: BaseException) -> str:
    """Spark's own message: the innermost JVM cause, without stack traces or query plans."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    text = ""
    if java is not None:
        try:
            cause = java
            while cause.getCause() is not None and not cause.getCause().equals(cause):
                cause = cause.getCause()
            text = cause.getMessage() or cause.toString()
        except Exception:  # noqa: BLE001 - fall back to the Python text
            text = ""
    text = text or str(getattr(exc, "desc", None) or exc) or type(exc).__name__
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("\tat ")]
    return "\n".join(lines[:12]).strip()
