"""Writing `java.util.Properties` files, the way `Properties.load` reads them back.

spark-submit reads `--properties-file` with `Properties.load` (UTF-8): a backslash starts an
escape, a line break ends the entry (a newline in a password would start a new, injected
property), and in a key `=`, `:` and spaces end the key. Everything that could be read otherwise
is escaped; characters outside printable ASCII are written as `\\uXXXX`.
"""

from __future__ import annotations

_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}
_KEY_SPECIALS = "=: #!"


def escape(text: str, *, key: bool) -> str:
    out = []
    for index, char in enumerate(text):
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif (key and char in _KEY_SPECIALS) or (char == " " and index == 0):
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:
            encoded = char.encode("utf-16-be")
            out.extend(
                f"\\u{int.from_bytes(encoded[i : i + 2], 'big'):04x}"
                for i in range(0, len(encoded), 2)
            )
    return "".join(out)


def properties_text(properties: dict[str, str]) -> str:
    """One `key=value` line per property, each escaped."""
    return "".join(f"{escape(k, key=True)}={escape(v, key=False)}\n" for k, v in properties.items())
