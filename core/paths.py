"""Where the playground keeps its files on this machine: the saved-tokenizer library and,
inside it, the table cache. One floor module, so the formats (which cache tables) and the
services (which keep the library) agree without one importing the other.

>>> import os
>>> library_dir({"TOKPLAY_LIBRARY_DIR": "/srv/tok"}).as_posix()
'/srv/tok'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

#: The environment variable that moves the library (and its table cache) elsewhere.
LIBRARY_ENV_VAR = "TOKPLAY_LIBRARY_DIR"


def default_library_dir() -> Path:
    """The per-user data folder used when neither ``root`` nor TOKPLAY_LIBRARY_DIR is given."""
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    return base / "tokenizer-playground"


def library_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The library's folder: TOKPLAY_LIBRARY_DIR when set, else :func:`default_library_dir`."""
    return Path(environ.get(LIBRARY_ENV_VAR) or default_library_dir()).expanduser()
