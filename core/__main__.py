"""Command line entry: ``python -m core COMMAND ...`` runs :func:`core.cli.main` (encode,
decode, evaluate, inspect, train; ``python -m core --help``)."""

from __future__ import annotations

import sys

from core.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
