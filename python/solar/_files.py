"""Files (no torch or jax here): ``write_atomic``, ``check_output_paths`` and ``read_json``."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from typing import Any


def write_atomic(
    path: str,
    data: bytes | str,
    check: Callable[[str], None] | None = None,
    suffix: str = ".tmp",
) -> None:
    """Writes to a temporary file beside ``path`` and renames it into place (text as UTF-8);
    ``check(temporary_path)``, when given, runs before the rename and stops it by raising (the
    temporary file is removed, ``path`` untouched). ``suffix``: the temporary file's ending (a
    reader that goes by the extension may need the real one)."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise OSError(f"cannot write '{path}': it is a directory")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".solar-", suffix=suffix)
    except OSError as e:  # name the file asked for, not the temporary one
        raise OSError(f"cannot write '{path}': {e.strerror or e}") from e
    try:
        os.chmod(tmp, _new_file_mode(path))  # mkstemp's 0600 would make the file private
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _new_file_mode(path: str) -> int:
    """The permissions ``path`` gets: an existing file's own, else what ``open`` would give a new
    file (0666 less the umask), as the C++ writer (util/file.h) does."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def check_output_paths(*paths: str | None) -> None:
    """Each output path (None or '-': none) can be written: its directory exists, it is not a
    directory and no other output names it, so that a bad path stops the command before anything
    is run or written."""
    seen: set[str] = set()
    for path in paths:
        if not path or path == "-":
            continue
        if os.path.abspath(path) in seen:
            raise ValueError(f"two outputs are written to the same file '{path}'")
        seen.add(os.path.abspath(path))
        directory = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise OSError(f"cannot write '{path}': it is a directory")
        if not os.path.isdir(directory):
            raise OSError(f"cannot write '{path}': no directory '{os.path.dirname(path)}'")


def read_json(path: str) -> Any:
    """The JSON value in the file at ``path``; one line naming it when it cannot be read
    (``OSError``) or is not JSON (``ValueError``: ``path:line:col: not JSON: ...``)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise OSError(f"cannot read '{path}': {e.strerror or e}") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from e
