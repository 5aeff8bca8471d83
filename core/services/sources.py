"""Where a tokenizer comes from: one small value per kind of source, for pages, links and the
command line. Each one names itself (``label``), keys its content for caches (``key``), says
in a few words where it comes from (``describe``) and loads (``load``).

==========  ==========================  ===========================  =========================
kind        label (pickers)             key (caches)                 read from
==========  ==========================  ===========================  =========================
Preset      ``GPT-2 (gpt2)``            ``preset:gpt2``              label, link, ``-t gpt2``
Baseline    ``Word-level baseline``     ``baseline:word``            label, link
Saved       ``📚 <name> · <16 hex>``    ``lib:<16 hex>``             label, link ``lib:<ID>``
Hub         ``🤗 org/name``             ``hub:<content hash>``       label, ``-t org/name``
Local       ``🦙 <name>`` (GGUF)        ``gguf:<content hash>``      label
Own         the session's label         ``own:<content hash>``       the session (trained,
                                                                     uploaded)
Files       the files' names            ``files:<content hash>``     ``-t a.pkl,b.pkl``, an
                                                                     upload
==========  ==========================  ===========================  =========================

A Saved ID is a content hash already; a Hub or local model is keyed by what it loads (a
repo's tokenizer can change under its name). :func:`from_label` reads a picker label,
:func:`from_link` a link's ``tok=``, :func:`from_spec` the command line's ``-t``.

How each kind loads, and what the captions know of saved, Hub and local models, is one
:class:`Loaders` value: core's own (:data:`CORE`, for the command line) loads directly; the
app passes its shared caches (``ui.state``).

>>> from_label("GPT-4 (cl100k_base)"), from_link("gpt2"), from_spec("o200k_base")
(Preset(name='cl100k_base'), Preset(name='gpt2'), Preset(name='o200k_base'))
>>> from_label("📚 mine · 0123456789abcdef").key(CORE)
'lib:0123456789abcdef'
>>> Hub("Qwen/Qwen3-8B").label, from_label("🦙 llama3.2:latest")
('🤗 Qwen/Qwen3-8B', Local(name='llama3.2:latest'))
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from core.errors import HubError, PlaygroundError
from core.formats.detect import FileSet, identify_files, load_tokenizer_files
from core.formats.presets import PRESET_LABELS, PRESETS, load_preset
from core.interface import TokenizerInterface
from core.services.hub import check_repo_id, from_pretrained
from core.services.library import Entry
from core.services.library_json import validate_id

__all__ = [
    "BASELINE_LABELS",
    "CORE",
    "HUB_ICON",
    "LIBRARY_ICON",
    "LOCAL_ICON",
    "MAX_FILE_BYTES",
    "PRESET_LABELS",
    "Baseline",
    "Files",
    "Hub",
    "Loaders",
    "Local",
    "Own",
    "Preset",
    "Saved",
    "Source",
    "from_label",
    "from_link",
    "from_spec",
    "looks_like_hub_id",
]

#: Baseline label -> kind (``core.explain.baselines``: word-level, char-level BPE).
BASELINE_LABELS: dict[str, str] = {
    "Word-level baseline": "word",
    "Char-level baseline": "char",
}
LIBRARY_ICON, HUB_ICON, LOCAL_ICON = "📚", "🤗", "🦙"
_LIBRARY_LABEL = re.compile(r"📚 (.*) · ([0-9a-f]{16})", re.S)

#: Largest tokenizer file the command line reads (a Llama 4 tokenizer.json is ~30 MB; GGUF
#: files hold weights).
MAX_FILE_BYTES = 512 * 1000 * 1000
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?")
_FILE_SUFFIXES = (".pkl", ".json", ".model", ".tiktoken", ".bpe", ".txt", ".gguf", ".gz")


# ---------------------------------------------------------------------------------------------
# How sources load, and what captions know


def _elsewhere(what: str) -> Callable[..., TokenizerInterface]:
    def refuse(*_args: object) -> TokenizerInterface:
        raise PlaygroundError(f"{what} open in the app only: run `tokplay app` (or `make run`)")

    return refuse


def _load_files(files: Files) -> TokenizerInterface:
    return load_tokenizer_files(files.files, special_tokens=files.special_tokens,
                                pattern=files.pattern, found=files.found)


@dataclass(frozen=True)
class Loaders:
    """One loader per kind of source, and what captions say of saved, Hub and local models.

    The defaults are core's own: presets and Hub models load each time they are asked for
    (presets are kept per process by :func:`core.formats.presets.load_preset`), files through
    :func:`core.formats.load_tokenizer_files`; baselines, saved tokenizers and the server's
    GGUF models belong to the app, which passes its shared caches for every kind.
    """

    preset: Callable[[str], TokenizerInterface] = load_preset
    baseline: Callable[[str], TokenizerInterface] = _elsewhere("baselines")
    saved: Callable[[str], TokenizerInterface] = _elsewhere("saved tokenizers")
    hub: Callable[[str, str | None], TokenizerInterface] = \
        lambda repo, revision: from_pretrained(repo, revision=revision)
    local: Callable[[str], TokenizerInterface] = _elsewhere("local GGUF models")
    files: Callable[[Files], TokenizerInterface] = _load_files
    #: The saved tokenizer's metadata (None: not in the library).
    saved_entry: Callable[[str], Entry | None] = lambda _entry_id: None
    #: A Hub model in a few words (the app says whether it is cached on the server).
    hub_words: Callable[[str], str] = lambda repo: f"Hugging Face Hub model {repo}"
    #: A local GGUF model in a few words (the app says where it is kept, and its size).
    local_words: Callable[[str], str] = lambda name: f"GGUF model {name} on this machine"


# ---------------------------------------------------------------------------------------------
# The kinds


@dataclass(frozen=True)
class Preset:
    """One of OpenAI's tokenizers shipped with the package (:mod:`core.formats.presets`)."""

    name: str  # gpt2, cl100k_base, o200k_base

    @property
    def label(self) -> str:
        return next(label for label, name in PRESET_LABELS.items() if name == self.name)

    def key(self, loaders: Loaders) -> str:
        return "preset:" + self.name

    def describe(self, loaders: Loaders) -> str:
        return f"OpenAI preset {self.name} (tiktoken's files)"

    def origin(self) -> str:
        """Where it came from, for the command line's ``source:`` line."""
        return f"preset {self.name} (OpenAI's files, shipped with the package)"

    def load(self, loaders: Loaders) -> TokenizerInterface:
        return loaders.preset(self.name)


@dataclass(frozen=True)
class Baseline:
    """A word-level or char-level baseline trained on the built-in corpus."""

    kind: str  # word, char

    @property
    def label(self) -> str:
        return next(label for label, kind in BASELINE_LABELS.items() if kind == self.kind)

    def key(self, loaders: Loaders) -> str:
        return "baseline:" + self.kind

    def describe(self, loaders: Loaders) -> str:
        return "baseline trained on the built-in corpus"

    def load(self, loaders: Loaders) -> TokenizerInterface:
        return loaders.baseline(self.kind)


@dataclass(frozen=True)
class Saved:
    """A tokenizer saved in the server's library (:mod:`core.services.library`), by its ID."""

    entry_id: str  # 16 hex: a content hash, so one ID always names one tokenizer
    name: str = field(default="", compare=False)

    @property
    def label(self) -> str:
        """What pickers call it.

        >>> Saved("0123456789abcdef", "mine").label
        '📚 mine · 0123456789abcdef'
        """
        return f"{LIBRARY_ICON} {self.name} · {self.entry_id}"

    def key(self, loaders: Loaders) -> str:
        return "lib:" + self.entry_id

    def describe(self, loaders: Loaders) -> str:
        e = loaders.saved_entry(self.entry_id)
        if e is None:
            return "saved in the library"
        corpus = f" on {e.corpus_name}" if e.corpus_name else ""
        return (f"saved in the library: {e.vocab_size:,} tokens{corpus}, "
                f"{e.pattern if len(e.pattern) < 12 else 'custom'} pattern, {e.created[:10]}")

    def load(self, loaders: Loaders) -> TokenizerInterface:
        return loaders.saved(self.entry_id)


@dataclass(frozen=True)
class Hub:
    """A Hugging Face Hub model's tokenizer (:func:`core.services.hub.from_pretrained`)."""

    repo: str  # org/name, checked (core.services.hub.check_repo_id)
    revision: str | None = None

    @property
    def label(self) -> str:
        return f"{HUB_ICON} {self.repo}"

    def key(self, loaders: Loaders) -> str:
        return "hub:" + self.load(loaders).fingerprint()  # the content: a repo can change

    def describe(self, loaders: Loaders) -> str:
        return loaders.hub_words(self.repo)

    def origin(self) -> str:
        """Where it came from, for the command line's ``source:`` line."""
        return f"Hugging Face Hub {self.repo}" + (f" at {self.revision}" if self.revision else "")

    def load(self, loaders: Loaders) -> TokenizerInterface:
        return loaders.hub(self.repo, self.revision)


@dataclass(frozen=True)
class Local:
    """A GGUF model on the server's own disk, by the name the server lists it under (never
    a path: ``ui.local_models``)."""

    name: str

    @property
    def label(self) -> str:
        return f"{LOCAL_ICON} {self.name}"

    def key(self, loaders: Loaders) -> str:
        return "gguf:" + self.load(loaders).fingerprint()  # the content: a model pulled again

    def describe(self, loaders: Loaders) -> str:
        return loaders.local_words(self.name)

    def load(self, loaders: Loaders) -> TokenizerInterface:
        return loaders.local(self.name)


@dataclass(frozen=True)
class Own:
    """A tokenizer this session trained or uploaded, under its session label."""

    label: str
    tok: TokenizerInterface = field(compare=False, repr=False)
    note: str = field(default="", compare=False)  # "trained on ...", "uploaded a.pkl, b.pkl"
    fingerprint: str = ""  # tok.fingerprint(), computed once when it was registered

    def key(self, loaders: Loaders) -> str:
        return "own:" + (self.fingerprint or self.tok.fingerprint())

    def describe(self, loaders: Loaders) -> str:
        return self.note

    def load(self, loaders: Loaders) -> TokenizerInterface:
        return self.tok


@dataclass(frozen=True, eq=False)
class Files:
    """Tokenizer files: read from paths (the command line) or uploaded (file name -> bytes),
    with the special tokens and pattern to open them with (None: the files' own;
    :func:`core.formats.load_tokenizer_files` uses them or refuses them, never ignores them).
    """

    files: Mapping[str, bytes] = field(repr=False)
    special_tokens: tuple[str, ...] | None = None
    pattern: str | None = None
    uploaded: bool = False

    @property
    def label(self) -> str:
        return " + ".join(sorted(self.files))

    @cached_property
    def found(self) -> FileSet:
        """What :func:`core.formats.identify_files` says of the files (asked once)."""
        return identify_files(self.files)

    def key(self, loaders: Loaders) -> str:
        h = hashlib.sha256(repr((self.special_tokens, self.pattern)).encode())
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + len(self.files[name]).to_bytes(8, "little"))
            h.update(self.files[name])
        return "files:" + h.hexdigest()[:16]

    def describe(self, loaders: Loaders) -> str:
        return "uploaded " + ", ".join(sorted(self.files))

    def origin(self) -> str:
        """Which files were read, for the command line's ``source:`` line."""
        return _files_origin(list(self.files), self.found.other_formats)

    def load(self, loaders: Loaders) -> TokenizerInterface:
        return loaders.files(self)


#: Every kind of tokenizer source.
Source = Preset | Baseline | Saved | Hub | Local | Own | Files
#: Core's own loaders (the command line's).
CORE = Loaders()


# ---------------------------------------------------------------------------------------------
# Reading a source from a label, a link or the command line


def from_label(label: str) -> Preset | Baseline | Saved | Hub | Local | None:
    """The source a picker label names (a session's own labels are the session's to know),
    else None."""
    if label in PRESET_LABELS:
        return Preset(PRESET_LABELS[label])
    if label in BASELINE_LABELS:
        return Baseline(BASELINE_LABELS[label])
    saved = _LIBRARY_LABEL.fullmatch(label)
    if saved is not None:
        return Saved(saved.group(2), saved.group(1))
    if label.startswith(HUB_ICON + " "):
        try:
            return Hub(check_repo_id(label[len(HUB_ICON) + 1:]))
        except HubError:
            return None
    name = label[len(LOCAL_ICON) + 1:] if label.startswith(LOCAL_ICON + " ") else ""
    return Local(name) if name else None


def from_link(name: str) -> Preset | Baseline | Saved | None:
    """The source a link's ``tok=`` names: a preset or baseline by label, a preset by name
    (``gpt2``), a saved tokenizer as ``lib:<ID>`` (the ID's form checked here:
    ``core.errors.InvalidIdError``; whether the library holds it is the caller's to ask);
    else None (a session's own label is the session's to know)."""
    if name.startswith("lib:"):
        return Saved(validate_id(name[4:]))
    if name in PRESETS:
        return Preset(name)
    found = from_label(name)
    return found if isinstance(found, (Preset, Baseline)) else None


def looks_like_hub_id(spec: str) -> bool:
    """True for ``org/name`` (and ``org/name@rev``) that is not spelled like a file path.

    >>> looks_like_hub_id("Qwen/Qwen3-8B"), looks_like_hub_id("models/vocab.pkl")
    (True, False)
    """
    name = spec.split("@", 1)[0]
    return bool(_HUB_ID.fullmatch(spec)) and not name.lower().endswith(_FILE_SUFFIXES)


def from_spec(spec: str) -> Preset | Files | Hub:
    """The source the command line's ``-t spec`` names, tried in this order: a preset name,
    paths (one file, several joined by commas, or a folder), a Hub ID ``org/name[@rev]``."""
    spec = spec.strip()
    if not spec:
        raise PlaygroundError("-t is empty: give a preset (gpt2, cl100k_base, o200k_base), a "
                              "tokenizer file or a Hub ID org/name")
    if spec in PRESETS:
        return Preset(spec)
    paths = [p for p in spec.split(",") if p]
    if "," in spec or any(os.path.exists(p) for p in paths) or not looks_like_hub_id(spec):
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise PlaygroundError(
                f"unknown tokenizer {spec!r}: {missing[0]!r} is not a file, and -t takes a "
                f"preset ({', '.join(PRESETS)}), tokenizer file(s) (vocab.pkl,merges.pkl; "
                "tokenizer.json; ...) or a Hub ID org/name")
        files = _read_files(paths)
        if not files:
            raise PlaygroundError(f"no files in {spec!r}: give the tokenizer's files")
        return Files(files)
    repo, _, revision = spec.partition("@")
    return Hub(repo, revision or None)


def _files_origin(names: list[str], others: list[str]) -> str:
    """Which files were read, and which (the same tokenizer in another format) were not.

    >>> _files_origin(["tokenizer.json", "vocab.pkl", "merges.pkl"], ["vocab.pkl", "merges.pkl"])
    'files tokenizer.json (the same tokenizer in other formats, not read: vocab.pkl, merges.pkl)'
    """
    read = ", ".join(sorted(n for n in names if n not in others))
    if not others:
        return f"files {read}"
    return f"files {read} (the same tokenizer in other formats, not read: {', '.join(others)})"


def _read_files(paths: list[str]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in paths:
        if os.path.isdir(path):
            inside = sorted(os.path.join(path, n) for n in os.listdir(path))
            files.update(_read_files([p for p in inside if os.path.isfile(p)]))
            continue
        if not os.path.isfile(path):
            raise PlaygroundError(f"tokenizer file {path!r} not found")
        if os.path.getsize(path) > MAX_FILE_BYTES:
            raise PlaygroundError(f"tokenizer file {path!r} is larger than "
                                  f"{MAX_FILE_BYTES // 1_000_000:,} MB: is it a model's weights?")
        with open(path, "rb") as fh:
            files[os.path.basename(path)] = fh.read()
    return files
