"""IR-valid, unique tensor names for a captured graph (docs/capture.md, "Names")."""

from __future__ import annotations

import re

# Words the IR reserves (docs/ir.md, "Lexical structure"): never valid as tensor names.
RESERVED = frozenset(
    "size input weight output tensor kernel for in repeat op inf nan "
    "f64 f32 f16 bf16 f8e4m3 f8e5m2 i64 i32 i8 u8 bool".split()
)


def sanitize(name: str) -> str:
    """``name`` as an IR identifier: other characters become ``_``; a leading digit, an empty name
    or a reserved word gets a ``_`` (prefix for the first two, suffix for the last)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not out or out[0].isdigit():
        out = "_" + out
    if out in RESERVED:
        out += "_"
    return out


class NameTable:
    """Hands out unique sanitized names, in the order asked: the first to want a name gets it,
    later ones get ``name_1``, ``name_2``, ... (skipping any already taken)."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def take(self, wanted: str) -> str:
        base = sanitize(wanted)
        name, k = base, 0
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return name
