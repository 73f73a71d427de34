"""The ``solar`` console command.

Subcommands implemented in C++ (``solar ir check|fmt|run``, ``--version``, ``help``) run
in-process through ``solar._core.run_cli``, the same code as the native ``solar`` executable.
Python-only subcommands (those that need PyTorch or JAX) are added here by later work.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from solar import _core


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``solar ARGS...``; returns the exit code (0 ok, 1 user error, 2 internal error)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return _core.run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
