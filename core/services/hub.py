"""Models by name: a tokenizer from the Hugging Face Hub, or from its local cache, by repo ID.

``from_pretrained("Qwen/Qwen3-8B")`` fetches that repo's tokenizer files (never its weights)
with ``huggingface_hub`` and hands them to :func:`core.formats.load_tokenizer_files`, so the
tokenizer is the one the file loaders give for the same files, ID for ID. Which files:

1. ``tokenizer.json``, with ``tokenizer_config.json`` and ``special_tokens_map.json`` where
   the repo has them (the loaders read what they need, e.g. the BOS template, from
   ``tokenizer.json`` itself);
2. else ``tokenizer.model`` (SentencePiece, or Meta's tiktoken rank file), ``tekken.json``
   (Mistral), or ``vocab.json`` + ``merges.txt`` (GPT-2's layout), the first one present.

``huggingface_hub`` does the transfer and keeps its cache, honouring ``HF_ENDPOINT``,
``HF_HOME`` (or ``HF_HUB_CACHE``), ``HF_HUB_OFFLINE`` and ``HF_TOKEN``; this module reads the
first three again on every call, so a process that changes them (a test, a server's
operator) is obeyed. Offline, or with the Hub unreachable, a model already in the cache
loads from it: :func:`cached_models` lists those. ``core`` itself imports without
``huggingface_hub`` (Pyodide): it is imported on the first call.

Every refusal is one line (a :class:`~core.errors.HubError`): a malformed ID, an unknown
repo, a repo without tokenizer files (its files are listed), no network (the cached models
are listed), a gated or private repo (a token is needed).

>>> check_repo_id("Qwen/Qwen3-8B")
'Qwen/Qwen3-8B'
>>> check_repo_id("../../etc/passwd")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
core.errors.HubError: '../../etc/passwd' is not a Hugging Face model ID: ...
>>> choose_files(["config.json", "tokenizer.json", "model.safetensors", "tokenizer_config.json"])
('tokenizer.json', 'tokenizer_config.json')
>>> choose_files(["vocab.json", "merges.txt", "pytorch_model.bin"])
('vocab.json', 'merges.txt')
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import HubAccessError, HubError, HubOfflineError

if TYPE_CHECKING:
    from core.engine.tokenizer import Tokenizer
    from core.pipeline.tokenizer import PipelineTokenizer

__all__ = [
    "ALTERNATIVES",
    "COMPANIONS",
    "DEFAULT_ENDPOINT",
    "MAX_FILE_BYTES",
    "HubSettings",
    "cached_models",
    "check_repo_id",
    "check_revision",
    "choose_files",
    "fetch_tokenizer_files",
    "from_pretrained",
    "hub_settings",
    "raise_hub_answer",
]

#: The first choice, and the files that travel with it when the repo has them.
TOKENIZER_JSON = "tokenizer.json"
COMPANIONS = ("tokenizer_config.json", "special_tokens_map.json",
              "chat_template.jinja")  # the chat template, when not in the config (core.chat.template)
#: Without a tokenizer.json: the first of these sets the repo has, in this order.
ALTERNATIVES: tuple[tuple[str, ...], ...] = (
    ("tokenizer.model",), ("tekken.json",), ("vocab.json", "merges.txt"),
)
#: Every file name this module may fetch: nothing else (weights) is ever downloaded.
CANDIDATES = (TOKENIZER_JSON, *COMPANIONS, *(n for alt in ALTERNATIVES for n in alt))
#: The largest tokenizer file read (Gemma 3's tokenizer.json, the largest we know, is 33 MB).
MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_ENDPOINT = "https://huggingface.co"
#: How many of a repo's files (or of the cached models) a message names.
_LISTED = 12
_MAX_ID_CHARS = 96  # the Hub's own limit on a repo ID

# One part of an ID: letters, digits, "_", "-", "." inside, a letter, digit or "_" at each end
# (the Hub's rule, ASCII only). "--" and ".." are refused separately: "--" is the cache's
# folder separator (models--org--name) and ".." a path step.
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"(?:{_PART}/)?{_PART}")
# Branches, tags, commit hashes and refs/pr/N: no "..", no empty step, no leading "/".
_REVISION = re.compile(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*")


def _shown(value: object, limit: int = 60) -> str:
    """A user's value inside a message: quoted, control characters visible, shortened."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 2] + "…" + text[-1]


def check_repo_id(repo_id: object) -> str:
    """``repo_id`` if it is a well-formed Hub model ID (``org/name``, or a legacy bare name
    such as ``gpt2``), else a one-line :class:`HubError`. Nothing that could name a path
    outside the cache passes (``..``, ``/`` at either end, ``\\``, ``--``).

    >>> check_repo_id("gpt2"), check_repo_id("google-bert/bert-base-uncased")
    ('gpt2', 'google-bert/bert-base-uncased')
    >>> check_repo_id("a/b/c")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.HubError: 'a/b/c' is not a Hugging Face model ID: ...
    """
    ok = (
        isinstance(repo_id, str) and len(repo_id) <= _MAX_ID_CHARS
        and _REPO_ID.fullmatch(repo_id) is not None
        and ".." not in repo_id and "--" not in repo_id
    )  # fmt: skip
    if not ok:
        raise HubError(
            f"{_shown(repo_id)} is not a Hugging Face model ID: write it as org/name "
            f"(letters, digits, '-', '_' and '.', at most {_MAX_ID_CHARS} characters), "
            "e.g. Qwen/Qwen3-8B"
        )
    return repo_id  # type: ignore[return-value]


def check_revision(revision: object) -> str | None:
    """``revision`` (a branch, tag or commit hash) if well-formed, ``None`` for the default
    branch, else a one-line :class:`HubError`.

    >>> check_revision(None), check_revision("refs/pr/1")
    (None, 'refs/pr/1')
    >>> check_revision("../main")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.HubError: '../main' is not a revision: ...
    """
    if revision is None:
        return None
    ok = (
        isinstance(revision, str) and len(revision) <= 128
        and _REVISION.fullmatch(revision) is not None and ".." not in revision
    )  # fmt: skip
    if not ok:
        raise HubError(
            f"{_shown(revision)} is not a revision: give a branch, a tag or a commit hash "
            "(letters, digits, '-', '_', '.', '/'), or none for the default branch"
        )
    return revision  # type: ignore[return-value]


def choose_files(names: Iterable[str]) -> tuple[str, ...]:
    """The files to fetch from a repo holding ``names`` (its root's file names), in the
    order of preference the module docstring gives; ``()`` when it has no tokenizer.

    >>> choose_files(["tokenizer.model", "tekken.json"])
    ('tokenizer.model',)
    >>> choose_files(["vocab.json"])  # merges.txt is missing: not a tokenizer
    ()
    """
    have = set(names)
    if TOKENIZER_JSON in have:
        return (TOKENIZER_JSON, *(n for n in COMPANIONS if n in have))
    for alternative in ALTERNATIVES:
        if have.issuperset(alternative):
            return alternative
    return ()


# ─── settings and the package ───────────────────────────────────────────────────────────


@dataclass(frozen=True)
class HubSettings:
    """Where models come from and where they are kept, read from the environment."""

    endpoint: str  # HF_ENDPOINT
    cache_dir: str  # HF_HUB_CACHE, else $HF_HOME/hub, else huggingface_hub's default
    offline: bool  # HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set to 1/true/yes/on, now or
    # when huggingface_hub was imported (it then refuses every request for good)


def _is_true(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def hub_settings() -> HubSettings:
    """The settings ``huggingface_hub`` would use, read from the environment now (it reads
    them once, when it is imported; a later change still counts here, except that offline
    at its import stays offline).

    >>> import os
    >>> env = dict(os.environ)
    >>> os.environ.update(HF_ENDPOINT="http://127.0.0.1:9/", HF_HOME="/tmp/hf", HF_HUB_OFFLINE="1")
    >>> os.environ.pop("HF_HUB_CACHE", None) and None
    >>> hub_settings()
    HubSettings(endpoint='http://127.0.0.1:9', cache_dir='/tmp/hf/hub', offline=True)
    >>> os.environ.clear(); os.environ.update(env)
    """
    env = os.environ
    endpoint = env.get("HF_ENDPOINT", "").strip().rstrip("/")
    cache = env.get("HF_HUB_CACHE", "").strip()
    if not cache and env.get("HF_HOME", "").strip():
        cache = os.path.join(os.path.expanduser(env["HF_HOME"].strip()), "hub")
    constants = _hub_module("huggingface_hub.constants")
    endpoint = endpoint or str(constants.ENDPOINT).rstrip("/") or DEFAULT_ENDPOINT
    cache = cache or str(constants.HF_HUB_CACHE)
    offline = _is_true(env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE")) or bool(
        constants.HF_HUB_OFFLINE)
    return HubSettings(endpoint, os.path.expanduser(cache), offline)


def _hub_module(name: str = "huggingface_hub") -> Any:
    """Import ``huggingface_hub`` (or one of its modules) on first use, or say how to get it."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise HubError(
            "loading a model by name needs the huggingface_hub package "
            f"({err}): pip install huggingface_hub"
        ) from None


# ─── fetching ───────────────────────────────────────────────────────────────────────────


def from_pretrained(repo_id: str, *, revision: str | None = None) -> Tokenizer | PipelineTokenizer:
    """The tokenizer of the Hub model ``repo_id`` (at ``revision``, default: its main
    branch), as :func:`core.formats.load_tokenizer_files` makes it from the repo's files.

    Online, the files are fetched once and kept in the Hugging Face cache; offline
    (``HF_HUB_OFFLINE=1``, or the Hub unreachable) they are read from that cache. Raises a
    :class:`~core.errors.HubError` (one line) when the model cannot be had, and a
    :class:`~core.errors.FormatError` when its files are not a tokenizer we read.
    """
    from core.formats.detect import load_tokenizer_files

    files = fetch_tokenizer_files(repo_id, revision=revision)
    name = repo_id if revision is None else f"{repo_id}@{revision}"
    return load_tokenizer_files(files, name=name)


def fetch_tokenizer_files(repo_id: str, *, revision: str | None = None) -> dict[str, bytes]:
    """The repo's tokenizer files (file name -> bytes), from the Hub or its local cache."""
    repo = check_repo_id(repo_id)
    rev = check_revision(revision)
    settings = hub_settings()
    hub = _hub_module()
    listing: dict[str, int | None] | None = None
    if not settings.offline:
        listing = _remote_listing(hub, repo, rev, settings)  # None: the Hub cannot be reached
    if listing is None:
        paths = _cached_files(hub, repo, rev, settings)
        chosen = choose_files(paths)
        if not chosen:
            raise HubOfflineError(_offline_message(repo, rev, settings))
        return {name: _read(paths[name], name, repo) for name in chosen}
    chosen = choose_files(listing)
    if not chosen:
        raise HubError(
            f"{repo} has no tokenizer files (tokenizer.json, tokenizer.model, tekken.json or "
            f"vocab.json + merges.txt); it has: {_listed(sorted(listing)) or 'no files at all'}"
        )
    for name in chosen:
        size = listing[name]
        if size is not None and size > MAX_FILE_BYTES:
            raise HubError(_too_large(repo, name, size))
    return {name: _read(_download(hub, repo, name, rev, settings), name, repo) for name in chosen}


def _remote_listing(
    hub: Any, repo: str, rev: str | None, settings: HubSettings
) -> dict[str, int | None] | None:
    """The root files of the repo and their sizes, as the Hub lists them; ``None`` when the
    Hub cannot be reached (then the cache is the only source)."""
    api = hub.HfApi(endpoint=settings.endpoint)
    try:
        info = api.model_info(repo, revision=rev, files_metadata=True, timeout=20)
    except Exception as err:  # noqa: BLE001 - sorted below: the Hub's answers vs no network
        raise_hub_answer(err, repo, rev, settings)
        return None
    return {
        s.rfilename: getattr(s, "size", None)
        for s in (info.siblings or ())
        if "/" not in s.rfilename  # the root's files: a subfolder's tokenizer is another model's
    }


def _download(hub: Any, repo: str, name: str, rev: str | None, settings: HubSettings) -> str:
    """One file through ``hf_hub_download`` (into the cache, or from it), as a path."""
    try:
        return str(hub.hf_hub_download(
            repo, name, revision=rev, cache_dir=settings.cache_dir, endpoint=settings.endpoint,
        ))  # fmt: skip
    except Exception as err:  # noqa: BLE001 - sorted below
        raise_hub_answer(err, repo, rev, settings)
        raise HubOfflineError(_offline_message(repo, rev, settings)) from None


def raise_hub_answer(
    err: Exception, repo: str, rev: str | None, settings: HubSettings, *, kind: str = "model"
) -> None:
    """Turn an answer of the Hub into a one-line HubError; return for anything that means
    "the Hub cannot be reached" (the caller then falls back to the cache). ``kind``: what
    the repo is, as the message names it ("model", or "dataset" for core.train.hub_datasets)."""
    errors = _hub_module("huggingface_hub.errors")
    token = ("set HF_TOKEN to a token with access (huggingface.co/settings/tokens) or run "
             "`huggingface-cli login`")
    if isinstance(err, errors.GatedRepoError):
        raise HubAccessError(
            f"{repo} is a gated {kind}: the Hub lets only accounts that accepted its terms "
            f"download it, so a token is needed: {token}"
        ) from None
    if isinstance(err, errors.RepositoryNotFoundError):
        raise HubAccessError(
            f"no {kind} named {repo} on {settings.endpoint}: check the name (org/name, as on its "
            f"Hub page); if it is private, a token is needed: {token}"
        ) from None
    if isinstance(err, errors.RevisionNotFoundError):
        raise HubError(
            f"{repo} has no revision {_shown(rev)}: give a branch, tag or commit it has"
        ) from None
    if isinstance(err, errors.LocalEntryNotFoundError):
        return  # no network and not cached: the caller says offline
    if isinstance(err, errors.EntryNotFoundError):
        raise HubError(
            f"{repo} lists a file the Hub then does not serve: try again later"
        ) from None
    if isinstance(err, errors.HfHubHTTPError):
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status in (401, 403):
            raise HubAccessError(
                f"{settings.endpoint} refused {repo} ({status}): a token is needed: {token}"
            ) from None
        if status is not None and status < 500 and status != 429:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise HubError(f"{settings.endpoint} answered {status} for {repo}: {first}") from None
    # connection refused, timeouts, offline mode, 5xx and 429: the cache may still have it


def _cached_files(hub: Any, repo: str, rev: str | None, settings: HubSettings) -> dict[str, str]:
    """The tokenizer files of ``repo`` in the local cache (name -> path), at ``rev`` or, with
    none given, at ``main`` (else the newest cached snapshot that has a tokenizer)."""
    revision = _cached_revision(hub, repo, rev, settings)
    if revision is None:
        return {}
    root = Path(revision.snapshot_path)
    return {f.file_name: str(f.file_path) for f in revision.files
            if Path(f.file_path).parent == root and f.file_name in CANDIDATES}


def _scan(hub: Any, settings: HubSettings) -> list[Any]:
    """The model repos of the local cache (``scan_cache_dir``); none when it does not exist."""
    if not os.path.isdir(settings.cache_dir):
        return []
    try:
        info = hub.scan_cache_dir(settings.cache_dir)
    except Exception:  # noqa: BLE001 - an unreadable or damaged cache holds nothing usable
        return []
    return [r for r in info.repos if r.repo_type == "model"]


def _cached_revision(hub: Any, repo: str, rev: str | None, settings: HubSettings) -> Any:
    found = next((r for r in _scan(hub, settings) if r.repo_id == repo), None)
    if found is None:
        return None
    return _pick_revision(found.revisions, rev)


def _pick_revision(revisions: Iterable[Any], rev: str | None) -> Any:
    """The cached revision ``rev`` names (a ref or a commit hash); without ``rev``, ``main``,
    else the newest snapshot holding a tokenizer (e.g. one fetched by commit hash)."""
    revisions = list(revisions)
    if rev is not None:
        return next((r for r in revisions if rev in r.refs or r.commit_hash == rev), None)
    main = next((r for r in revisions if "main" in r.refs), None)
    if main is not None:
        return main
    usable = [r for r in revisions if choose_files(_root_names(r))]
    return max(usable, key=lambda r: r.last_modified, default=None)


def _root_names(revision: Any) -> list[str]:
    root = Path(revision.snapshot_path)
    return [f.file_name for f in revision.files if Path(f.file_path).parent == root]


def cached_models() -> list[str]:
    """The models in the local Hugging Face cache that :func:`from_pretrained` can load
    offline (their default revision has tokenizer files), sorted by ID.

    >>> import os, tempfile
    >>> env = dict(os.environ)
    >>> os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp()
    >>> cached_models()  # an empty cache
    []
    >>> os.environ.clear(); os.environ.update(env)
    """
    settings = hub_settings()
    hub = _hub_module()
    out = []
    for repo in _scan(hub, settings):
        revision = _pick_revision(repo.revisions, None)
        if revision is not None and choose_files(_root_names(revision)):
            out.append(repo.repo_id)
    return sorted(out)


def _offline_message(repo: str, rev: str | None, settings: HubSettings) -> str:
    why = "HF_HUB_OFFLINE is set" if settings.offline else f"{settings.endpoint} cannot be reached"
    at = f" at revision {rev}" if rev else ""
    return (
        f"offline ({why}) and {repo}{at} is not in the local Hugging Face cache "
        f"({settings.cache_dir}); cached models: {_listed(cached_models()) or 'none'}"
    )


def _listed(names: list[str]) -> str:
    """The first few names, and how many more (a message stays one short line).

    >>> _listed(["a", "b"]), _listed([str(i) for i in range(14)])
    ('a, b', '0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 2 more')
    """
    more = len(names) - _LISTED
    return ", ".join(names[:_LISTED]) + (f" and {more} more" if more > 0 else "")


def _too_large(repo: str, name: str, size: int) -> str:
    return (f"{repo}'s {name} is {size / 2**20:,.0f} MB, more than the "
            f"{MAX_FILE_BYTES // 2**20} MB a tokenizer file may have here")


def _read(path: str, name: str, repo: str) -> bytes:
    """A fetched file's bytes, refusing one too large before reading it."""
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise HubError(_too_large(repo, name, size))
    with open(path, "rb") as fh:
        return fh.read(MAX_FILE_BYTES + 1)
