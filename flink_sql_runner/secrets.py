"""Keeping secrets out of everything the deployer prints."""

from __future__ import annotations

from typing import Any

SECRET_WORDS = ("secret", "password", "passwd", "token", "credential")
MASK = "*****"


def is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in SECRET_WORDS)


def mask(value: Any, key: str = "") -> Any:
    """`value` with every value under a secret-looking key (at any depth) replaced."""
    if key and is_secret_key(key):
        return MASK
    if isinstance(value, dict):
        return {k: mask(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    return value


def masked_conf_args(args: list[str]) -> list[str]:
    """A spark-submit argument list fit for printing: `--conf k=v` with secret k masked."""
    out = []
    for arg in args:
        key, sep, _ = arg.partition("=")
        out.append(f"{key}={MASK}" if sep and is_secret_key(key) else arg)
    return out
