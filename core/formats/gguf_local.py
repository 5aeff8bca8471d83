"""GGUF models already on this machine: what Ollama and LM Studio keep, and named folders.

- Ollama (``$OLLAMA_MODELS`` or ``~/.ollama/models``): each model is a manifest,
  ``manifests/<host>/<namespace>/<model>/<tag>`` (JSON), whose layer of media type
  ``application/vnd.ollama.image.model`` names a blob, ``blobs/sha256-<hex>``: the GGUF.
  Models are named as ``ollama list`` names them: ``llama3.2:latest`` for the default
  registry's ``library`` namespace, ``user/model:tag`` for other namespaces, and
  ``host/namespace/model:tag`` for other registries (``hf.co/...``).
- LM Studio (``~/.lmstudio/models``, older ``~/.cache/lm-studio/models``):
  ``<publisher>/<repo>/<file>.gguf``, named by that path.
- Folders in ``TOKPLAY_GGUF_DIRS`` (``os.pathsep``-separated) or ``dirs=``: every ``.gguf``.

A pure function of the file system, bounded in depth, entries visited and models listed, and
every file checked for GGUF's magic. Only the first shard of a split model
(``-00001-of-00003.gguf``) and no ``mmproj`` file (vision projectors carry no tokenizer) is
listed. Whether a server lists these at all is the app's decision (a shared server must not).

>>> local_gguf_models(dirs=[], home="/nonexistent")
[]
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.formats.gguf import GGUF_MAGIC

__all__ = ["ENV_DIRS", "LocalGGUF", "local_gguf_models"]

#: Folders of GGUF files named by whoever starts the server.
ENV_DIRS = "TOKPLAY_GGUF_DIRS"
MAX_DEPTH = 6  # folder levels below a root
MAX_ENTRIES = 20_000  # directory entries looked at, per root
MAX_MODELS = 500  # models listed in all
_MODEL_LAYER = "application/vnd.ollama.image.model"
_DEFAULT_REGISTRY = "registry.ollama.ai"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_SHARD = re.compile(r"-(\d{5})-of-\d{5}\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class LocalGGUF:
    """One model file: its display ``name``, ``path``, ``source`` (``"ollama"``,
    ``"lm-studio"`` or ``"folder"``) and ``size`` in bytes."""

    name: str
    path: str
    source: str
    size: int


def _is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == GGUF_MAGIC
    except OSError:
        return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _walk(root: Path) -> Iterator[tuple[Path, int]]:
    """Files under ``root`` with their depth, breadth-first, within the bounds (symlinked
    folders are not followed, so a link loop cannot keep it going)."""
    seen = 0
    level: list[Path] = [root]
    for depth in range(MAX_DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > MAX_ENTRIES:
                    return
                try:
                    if entry.is_dir(follow_symlinks=False):
                        below.append(Path(entry.path))
                    elif entry.is_file():
                        yield Path(entry.path), depth
                except OSError:
                    continue
        level = below
        if not level:
            return


def _listable(path: Path) -> bool:
    name = path.name.lower()
    if not name.endswith(".gguf") or name.startswith("mmproj"):
        return False
    shard = _SHARD.search(name)
    return shard is None or shard.group(1) == "00001"


def _ollama_name(parts: Sequence[str]) -> str | None:
    """``ollama list``'s name for ``manifests/<host>/<namespace>/<model>/<tag>``."""
    if len(parts) != 4:
        return None
    host, namespace, model, tag = parts
    if host == _DEFAULT_REGISTRY:
        return f"{model}:{tag}" if namespace == "library" else f"{namespace}/{model}:{tag}"
    return f"{host}/{namespace}/{model}:{tag}"


def _ollama(root: Path) -> Iterator[LocalGGUF]:
    manifests = root / "manifests"
    for path, depth in _walk(manifests):
        if depth != 3 or _size(path) > 1 << 20:  # a manifest is a small JSON file
            continue
        name = _ollama_name(path.relative_to(manifests).parts)
        try:
            layers = json.loads(path.read_text(encoding="utf-8")).get("layers") or []
        except (OSError, ValueError, AttributeError):
            continue
        if not name or not isinstance(layers, list):
            continue
        for layer in layers:
            if not isinstance(layer, dict) or layer.get("mediaType") != _MODEL_LAYER:
                continue
            digest = layer.get("digest")
            # a digest is "sha256:<hex>": anything else could name a file outside blobs/
            if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
                continue
            blob = root / "blobs" / digest.replace(":", "-")
            if _is_gguf(blob):
                yield LocalGGUF(name, str(blob), "ollama", _size(blob))


def _files(root: Path, source: str) -> Iterator[LocalGGUF]:
    for path, _ in _walk(root):
        if _listable(path) and _is_gguf(path):
            yield LocalGGUF(path.relative_to(root).as_posix(), str(path), source, _size(path))


def _roots(home: Path, env: Mapping[str, str], dirs: Sequence[str] | None) -> list[tuple[Path, str]]:
    roots = [(Path(env["OLLAMA_MODELS"]) if env.get("OLLAMA_MODELS") else home / ".ollama" / "models",
              "ollama")]  # fmt: skip
    roots += [(home / ".lmstudio" / "models", "lm-studio"),
              (home / ".cache" / "lm-studio" / "models", "lm-studio")]  # fmt: skip
    extra = dirs if dirs is not None else env.get(ENV_DIRS, "").split(os.pathsep)
    roots += [(Path(d).expanduser(), "folder") for d in extra if d.strip()]
    return roots


def local_gguf_models(
    *,
    dirs: Sequence[str] | None = None,
    home: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[LocalGGUF]:
    """The GGUF models Ollama and LM Studio keep under ``home`` (default: the user's), and
    those in ``dirs`` (default: the folders in ``$TOKPLAY_GGUF_DIRS``), sorted by source
    and name, at most :data:`MAX_MODELS`. The same file found twice is listed once."""
    environ = os.environ if env is None else env
    base = Path(home) if home is not None else Path.home()
    found: dict[str, LocalGGUF] = {}
    for root, source in _roots(base, environ, dirs):
        if not root.is_dir():
            continue
        models = _ollama(root) if source == "ollama" else _files(root, source)
        for model in models:
            key = os.path.realpath(model.path)
            found.setdefault(key, model)
            if len(found) >= MAX_MODELS:
                break
        if len(found) >= MAX_MODELS:
            break
    return sorted(found.values(), key=lambda m: (m.source, m.name))
