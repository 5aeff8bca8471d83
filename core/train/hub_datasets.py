"""Corpora on the Hugging Face Hub: ``hf://datasets/ORG/NAME[@REVISION]/PATH`` as files in the
local Hugging Face cache.

The address is the one ``huggingface_hub``'s ``HfFileSystem`` reads, and pandas, DuckDB and
``datasets`` with it. PATH names one file, a folder (its corpus files at any depth:
:func:`core.train.corpus_readers.is_corpus_name`), a glob (``data/*.parquet``; ``**`` for any
depth) or, left out, the whole repo's corpus files. Each file is fetched once with
``hf_hub_download`` into the Hugging Face cache and read from there; offline
(``HF_HUB_OFFLINE=1``, or the Hub unreachable) the cached snapshot serves. ``HF_ENDPOINT``,
``HF_HOME``/``HF_HUB_CACHE`` and ``HF_TOKEN`` count as for models, and the Hub's refusals
become the same one-line errors (:mod:`core.services.hub`).

>>> parse_hub_url("hf://datasets/roneneldan/TinyStories@main/data/*.parquet")
HubPath(repo='roneneldan/TinyStories', revision='main', path='data/*.parquet')
>>> select_files("data/*.parquet", ["README.md", "data/a.parquet", "data/b.parquet", "x/c.parquet"])
['data/a.parquet', 'data/b.parquet']
"""

from __future__ import annotations

import fnmatch
import functools
import os
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import HubError, HubOfflineError
from core.services.hub import (
    HubSettings,
    check_repo_id,
    check_revision,
    hub_settings,
    raise_hub_answer,
)
from core.train.corpus_readers import is_corpus_name

if TYPE_CHECKING:
    from core.train.count import ProgressCallback

__all__ = ["HUB_PREFIX", "HubPath", "fetch_dataset_files", "is_hub_url", "parse_hub_url",
           "select_files"]

HUB_PREFIX = "hf://"
_GLOB_CHARS = frozenset("*?[")
_LISTED = 12  # how many of a repo's files a message names
_EXAMPLE = "hf://datasets/ORG/NAME/PATH (e.g. hf://datasets/roneneldan/TinyStories/TinyStoriesV2-GPT4-valid.txt)"

@dataclass(frozen=True)
class HubPath:
    """A parsed ``hf://datasets/...`` address."""

    repo: str  #: ORG/NAME
    revision: str | None  #: None: the default branch
    path: str  #: inside the repo: a file, a folder, a glob, or "" for the whole repo


def is_hub_url(source: str) -> bool:
    """Whether a corpus argument is a Hub address (``hf://...``)."""
    return source.startswith(HUB_PREFIX)


def parse_hub_url(url: str) -> HubPath:
    """``hf://datasets/ORG/NAME[@REVISION][/PATH]`` as its parts (a revision with ``/``, like
    ``refs/pr/1``, is written ``refs%2Fpr%2F1``, as for ``HfFileSystem``); a one-line
    :class:`~core.errors.HubError` for anything else.

    >>> parse_hub_url("hf://datasets/org/name@refs%2Fpr%2F1")
    HubPath(repo='org/name', revision='refs/pr/1', path='')
    >>> parse_hub_url("hf://org/model/x.txt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.HubError: 'hf://org/model/x.txt' is not a Hub dataset: write hf://datasets/ORG/NAME/PATH ...
    """
    kind, _, rest = url[len(HUB_PREFIX):].partition("/")
    org, _, rest = rest.partition("/")
    name, _, path = rest.partition("/")
    name, at, revision = name.partition("@")
    path = path.strip("/")
    try:
        if kind != "datasets" or ".." in path.split("/"):
            raise HubError(url)
        repo = check_repo_id(f"{org}/{name}")
    except HubError:
        raise HubError(f"{url!r} is not a Hub dataset: write {_EXAMPLE}") from None
    return HubPath(repo, check_revision(urllib.parse.unquote(revision)) if at else None, path)


def select_files(pattern: str, names: Iterable[str]) -> list[str]:
    """The repo files ``pattern`` names, sorted: a file itself, a folder's corpus files, a
    glob's matches (``*`` within one folder, ``**`` across folders; a folder it matches
    gives its corpus files), or with ``""`` all the corpus files.

    >>> names = ["a.txt", "README.md", "data/b.parquet", "data/sub/c.txt", "data/notes.md"]
    >>> select_files("", names), select_files("data", names), select_files("README.md", names)
    (['a.txt', 'data/b.parquet', 'data/sub/c.txt'], ['data/b.parquet', 'data/sub/c.txt'], ['README.md'])
    >>> select_files("**/*.txt", names), select_files("data/*", names)
    (['a.txt', 'data/sub/c.txt'], ['data/b.parquet', 'data/notes.md', 'data/sub/c.txt'])
    """
    names = sorted(names)
    if not pattern:
        return [n for n in names if is_corpus_name(n)]
    if not _GLOB_CHARS.intersection(pattern):
        if pattern in names:
            return [pattern]
        return [n for n in names if n.startswith(pattern + "/") and is_corpus_name(n[len(pattern) + 1:])]
    globs = pattern.split("/")
    chosen = []
    for name in names:
        parts = name.split("/")
        if _glob_match(parts, globs):
            chosen.append(name)
        elif any(_glob_match(parts[:k], globs) and is_corpus_name("/".join(parts[k:]))
                 for k in range(1, len(parts))):
            chosen.append(name)  # in a folder the glob matches
    return chosen


def _glob_match(parts: Sequence[str], globs: Sequence[str]) -> bool:
    """Whether path ``parts`` match glob ``globs`` part for part (``**``: any number of parts).

    >>> _glob_match(["a", "b", "c.txt"], ["**", "*.txt"]), _glob_match(["a", "c.txt"], ["*.txt"])
    (True, False)
    """
    if not globs:
        return not parts
    if globs[0] == "**":
        return any(_glob_match(parts[i:], globs[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], globs[0]) and _glob_match(parts[1:], globs[1:])


# ─── fetching ───────────────────────────────────────────────────────────────────────────


def fetch_dataset_files(url: str, *, on_progress: ProgressCallback | None = None) -> list[str]:
    """The local paths (in the Hugging Face cache) of the files ``url`` names, fetched once.

    Online, the repo's listing says which files; each is downloaded unless already cached,
    reporting ``on_progress("downloading", done, total)`` in bytes. Offline, or with the
    Hub unreachable, the cached snapshot of the revision (default: ``main``) serves.
    """
    where = parse_hub_url(url)
    hub = _huggingface_hub()
    settings = hub_settings()
    listing = None if settings.offline else _remote_listing(hub, where, settings)
    if listing is None:  # offline: what the cache holds
        cached = _cached_files(hub, where, settings)
        chosen = select_files(where.path, cached)
        if not chosen:
            why = "HF_HUB_OFFLINE is set" if settings.offline else f"{settings.endpoint} cannot be reached"
            raise HubOfflineError(f"offline ({why}) and {url} is not in the local Hugging Face "
                                  f"cache ({settings.cache_dir}): fetch it once online")
        return [cached[name] for name in chosen]
    chosen = select_files(where.path, listing)
    if not chosen:
        names = sorted(listing)
        more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
        raise HubError(f"{url} names no file of the dataset {where.repo}; it has: "
                       f"{', '.join(names[:_LISTED]) or 'no files at all'}{more}")
    total = sum(listing[name] or 0 for name in chosen)

    def report(done: int, more: int = 0) -> None:
        if on_progress is not None:
            on_progress("downloading", min(done + more, total), total)

    paths, done = [], 0
    for name in chosen:
        paths.append(_download(hub, where, name, settings, functools.partial(report, done)))
        done += listing[name] or 0
        report(done)  # a file found in the cache is done at once
    return paths


def _remote_listing(hub: Any, where: HubPath, settings: HubSettings) -> dict[str, int | None] | None:
    """Every file of the dataset and its size, as the Hub lists them; None when the Hub
    cannot be reached (then the cache is the only source)."""
    api = hub.HfApi(endpoint=settings.endpoint)
    try:
        info = api.dataset_info(where.repo, revision=where.revision, files_metadata=True, timeout=20)
    except Exception as err:  # noqa: BLE001 - sorted by raise_hub_answer: the Hub's answers vs no network
        raise_hub_answer(err, where.repo, where.revision, settings, kind="dataset")
        return None
    return {s.rfilename: getattr(s, "size", None) for s in (info.siblings or ())}


def _download(
    hub: Any, where: HubPath, name: str, settings: HubSettings, report: Callable[[int], None]
) -> str:
    """One file through ``hf_hub_download`` (into the cache, or found there), as a path."""
    try:
        return str(hub.hf_hub_download(
            where.repo, name, repo_type="dataset", revision=where.revision,
            cache_dir=settings.cache_dir, endpoint=settings.endpoint, tqdm_class=_progress_class(report),
        ))  # fmt: skip
    except Exception as err:  # noqa: BLE001 - sorted below
        raise_hub_answer(err, where.repo, where.revision, settings, kind="dataset")
        raise HubOfflineError(f"{settings.endpoint} stopped answering while {where.repo}'s {name} "
                              "was downloading: try again (what was fetched stays cached)") from None


def _cached_files(hub: Any, where: HubPath, settings: HubSettings) -> dict[str, str]:
    """The dataset's files in the local cache at the revision (default ``main``): path in
    the repo -> local path."""
    if not os.path.isdir(settings.cache_dir):
        return {}
    try:
        repos = hub.scan_cache_dir(settings.cache_dir).repos
    except Exception:  # noqa: BLE001 - an unreadable or damaged cache holds nothing usable
        return {}
    rev = where.revision or "main"
    for repo in repos:
        if repo.repo_type == "dataset" and repo.repo_id == where.repo:
            for revision in repo.revisions:
                if rev in revision.refs or revision.commit_hash == rev:
                    root = Path(revision.snapshot_path)
                    return {Path(f.file_path).relative_to(root).as_posix(): str(f.file_path)
                            for f in revision.files}
    return {}


def _huggingface_hub() -> Any:
    """``huggingface_hub``, imported on first use (core imports without it: Pyodide)."""
    try:
        import huggingface_hub
    except ImportError as err:
        raise HubError(f"reading hf:// corpora needs the huggingface_hub package ({err}): "
                       "pip install huggingface_hub") from None
    return huggingface_hub


class _Nowhere:
    """A file that takes text and keeps none: where the quiet progress bars draw."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _progress_class(report: Callable[[int], None]) -> Any:
    """A tqdm class for ``hf_hub_download``'s ``tqdm_class``: draws nothing, reports the
    bytes received so far to ``report``. A real tqdm (huggingface_hub's own dependency), so
    every method a download may call exists."""
    try:
        from tqdm import tqdm  # huggingface_hub's own dependency: there when a download can be
    except ImportError as err:
        raise HubError(f"reading hf:// corpora needs the tqdm package ({err}): "
                       "pip install huggingface_hub") from None

    class _Reporting(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            kwargs["file"] = _Nowhere()
            super().__init__(*args, **kwargs)

        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            report(int(self.n))
            return shown

    return _Reporting
