"""Bounded caches around core, shared by every session (they hold only non-per-user data or
data keyed by content hash).

- ``st.cache_resource`` for tokenizer objects (presets, baselines, uploads keyed by content
  hash): never mutate what these return.
- ``st.cache_data`` for results computed from a tokenizer and a text (details, stats), keyed by
  :func:`ui.state.tokenizer_key` (a content hash), with the tokenizer itself passed as an
  unhashed ``_tok`` argument.
- except the encode and decode details, which every run of Tokenize, Compare and Decode
  reads: ``st.cache_resource``, because ``st.cache_data`` unpickles a copy on every call
  (8.7 ms for the details of 10,000 characters). They are frozen dataclasses: read them,
  never change them.

Tokenizers are typed by what the page asks of them (:mod:`core.interface`):
``TokenizerInterface`` to encode and decode, ``DetailedTokenizer`` for chips, merges and the
vocabulary, ``ScoredTokenizer`` for a Unigram model's scores; Replay's byte-level
``core.Tokenizer`` (the one that declares ``capabilities.replay``).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, cast

import pandas as pd
import streamlit as st

from core.engine.details import DecodeDetails, EncodingDetails, MergeNode, MergeStep
from core.engine.tokenizer import Tokenizer
from core.engine.vocab_table import (
    VocabRow,
    length_counts as count_lengths,
    search_rows,
    vocab_rows,
)
from core.errors import LibraryError
from core.explain import baselines
from core.explain.replay import TextReplay, vocab_sizes
from core.formats import presets
from core.formats.detect import AnyTokenizer, load_tokenizer_files
from core.interface import DetailedTokenizer, ScoredTokenizer, TokenizerInterface
from core.pipeline.models.unigram_paths import SplitPaths
from core.services.library import (
    LIBRARY_ENV_VAR,
    Entry,
    TokenizerLibrary,
    default_library_dir,
)
from core.train import BPETrainer
from core.train.builtin_corpus import BUILTIN_SEPARATOR, builtin_corpus_text
from ui import charts, limits, runtime
from ui.chips import show_bytes, visible
from ui.display import merge_number, spelling_name

#: Longest text the Tokenize and Compare pages process (characters): see ui/limits.py
#: (TOKPLAY_MAX_TEXT_CHARS, read once when the server starts).
MAX_TEXT_CHARS = limits.max_text_chars()
#: Longest ID list the Decode page processes (TOKPLAY_MAX_IDS).
MAX_IDS = limits.max_ids()
#: Vocab size of the char-level baseline and of the Home page's one-click tokenizer.
CHAR_BASELINE_VOCAB = 1000
QUICK_VOCAB = 1000

# ---------------------------------------------------------------------------------------------
# Tokenizer objects


@st.cache_resource(max_entries=3, show_spinner="Loading preset…")
def preset(name: str) -> Tokenizer:
    """``core.formats.presets`` tokenizer ``gpt2`` / ``cl100k_base`` / ``o200k_base`` (loaded once)."""
    return presets.load_preset(name)


@st.cache_resource(max_entries=2, show_spinner="Training the baseline on the built-in corpus…")
def baseline(kind: str) -> TokenizerInterface:
    """The word-level (``"word"``) or char-level (``"char"``) baseline, trained on the
    built-in corpus once per server."""
    text = builtin_corpus_text()
    if kind == "word":
        return baselines.WordTokenizer.train(text)
    if kind == "char":
        return baselines.CharBPETokenizer.train(text, CHAR_BASELINE_VOCAB)
    raise KeyError(f"unknown baseline {kind!r}")


def content_hash(files: dict[str, bytes]) -> str:
    """A stable hash of uploaded files (names and contents).

    >>> content_hash({"a": b"x"}) == content_hash({"a": b"x"})
    True
    """
    h = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:16]


def load_files(files: dict[str, bytes], *, special_tokens: list[str] | None = None,
               pattern: str | None = None) -> AnyTokenizer:
    """Load uploaded tokenizer files through core's safe loaders (cached by content hash).

    Raises ``core.FormatError`` (with a message for the user) on a bad or unsafe file.
    """
    specials = tuple(special_tokens) if special_tokens else None
    return _load_files(content_hash(files), specials, pattern, files)


@st.cache_resource(max_entries=16, show_spinner="Loading tokenizer files…")
def _load_files(digest: str, special_tokens: tuple[str, ...] | None, pattern: str | None,
                _files: dict[str, bytes]) -> AnyTokenizer:
    return load_tokenizer_files(
        _files, special_tokens=None if special_tokens is None else list(special_tokens),
        pattern=pattern)


# ---------------------------------------------------------------------------------------------
# Results computed from a tokenizer (key: tokenizer content key + inputs)


@st.cache_resource(max_entries=64, ttl=3600, show_spinner=False)
def encode_details(tok_key: str, text: str, _tok: DetailedTokenizer, *,
                   add_special_tokens: bool = False) -> EncodingDetails:
    """``EncodingDetails`` of ``text`` (chips, counts, pre-tokens); ``add_special_tokens``
    adds the model's BOS/EOS template. Read-only and shared (see the module's note)."""
    if add_special_tokens:
        return _tok.encode_details(text, add_special_tokens=True)
    return _tok.encode_details(text)


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def merge_trace(tok_key: str, pretoken: str, _tok: DetailedTokenizer) -> list[MergeStep]:
    """The "why this split" merge steps for one pre-token."""
    return _tok.merge_trace(pretoken)


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def split_paths(tok_key: str, pretoken: str, _tok: ScoredTokenizer) -> list[SplitPaths]:
    """Unigram's "why this split" for one pre-token: best path and next best per word."""
    return _tok.split_paths(pretoken)


@st.cache_resource(max_entries=64, ttl=3600, show_spinner=False)
def decode_details(tok_key: str, ids: tuple[int, ...], _tok: DetailedTokenizer) -> DecodeDetails:
    """``DecodeDetails`` for an ID sequence. Read-only and shared (see the module's note)."""
    return _tok.decode_details(list(ids))


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def encode(tok_key: str, text: str, _tok: TokenizerInterface) -> list[int]:
    """Plain IDs (used by the round-trip check and Compare)."""
    return list(_tok.encode(text))


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def baseline_pieces(tok_key: str, text: str, _tok: TokenizerInterface) -> list[str]:
    """A baseline's tokens of ``text`` as the text they stand for (each ID decoded alone), so
    chips show ``·``/``↵`` like every other view; ``tokenize()`` spells the char-level
    baseline's tokens the Hugging Face course's way (``Ġ`` for a space, ``Ċ`` for a newline)."""
    return [_tok.decode([i]) for i in encode(tok_key, text, _tok)]


@st.cache_data(max_entries=128, ttl=3600, show_spinner=False)
def merge_tree(tok_key: str, token_id: int, _tok: DetailedTokenizer) -> MergeNode:
    """``MergeNode`` tree of one token down to bytes."""
    return _tok.merge_tree(token_id)


# ---------------------------------------------------------------------------------------------
# The Home page's one-click tokenizer


@st.cache_data(max_entries=4, show_spinner="Training on the built-in corpus…")
def builtin_training(vocab_size: int) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]],
                                               tuple[tuple[Any, ...], ...]]:
    """Byte-level BPE trained on the built-in corpus (deterministic, so cached per server):
    ``(vocab, merges, rows)``, with one row per merge as the Train page records them
    (``ui.training_worker.MergeRow``), so Replay can chart this training too."""
    trainer = BPETrainer([builtin_corpus_text()], vocab_size, [BUILTIN_SEPARATOR])
    rows = tuple((e.rank, e.count, e.token, e.pair, e.vocab_size, e.elapsed) for e in trainer)
    return trainer.vocab, trainer.merges, rows


@st.cache_resource(max_entries=2, show_spinner="Training on the built-in corpus…")
def builtin_tokenizer(vocab_size: int) -> Tokenizer:
    """A ``core.Tokenizer`` trained on the built-in corpus (shared, never mutated by pages)."""
    vocab, merges, _ = builtin_training(vocab_size)
    return Tokenizer(vocab, merges, [BUILTIN_SEPARATOR], name="built-in corpus")


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def coverage(tok_key: str, text: str, _tok: TokenizerInterface) -> baselines.CoverageStats:
    """``core.explain.baselines.coverage_stats``: unknown-token rate, tokens per char, round trip."""
    return baselines.coverage_stats(_tok, text)


# ---------------------------------------------------------------------------------------------
# Vocabulary tables

#: Orders the Vocabulary page offers (:func:`vocab_orders` picks those that fit a tokenizer).
VOCAB_ORDERS = ("ID", "longest first", "newest merges first", "highest score first")


def vocab_orders(tok: TokenizerInterface, *, n_merges: int) -> tuple[str, ...]:
    """The orders that mean something for ``tok``: by merge when it lists merges
    (``n_merges``, counted once by the caller: a pipeline spells its list out on each read),
    by score for a Unigram model (neither for WordPiece, nor for SentencePiece BPE, whose
    pieces' scores order its merges but list none)."""
    meaningful = {"newest merges first": n_merges > 0,
                  "highest score first": tok.capabilities.scores}
    return tuple(o for o in VOCAB_ORDERS if meaningful.get(o, True))


@st.cache_resource(max_entries=16, ttl=3600, show_spinner="Building the vocabulary table…")
def vocab_table(tok_key: str, query: str, _tok: DetailedTokenizer, *,
                order: str = "ID") -> pd.DataFrame:
    """The vocabulary as a DataFrame (rows matching ``query``; see core.engine.vocab_table), sorted
    by one of :data:`VOCAB_ORDERS`; its "merge" column numbers merges from 1
    (``ui.display.merge_number``).

    subtle: a resource, shared and never copied: read it, never change it. As ``cache_data``
    every run of Vocabulary unpickled the whole table (GPT-2: 50,257 rows) to show 200 of
    them, a fifth of a new visitor's run of the page."""
    rows = search_rows(_vocab_rows(tok_key, _tok), query)
    if order == "longest first":
        rows = sorted(rows, key=lambda r: (-r.length, r.id))
    elif order == "newest merges first":
        rows = sorted(rows, key=lambda r: (r.rank is None, -(r.rank or 0), r.id))
    if _tok.capabilities.scores:  # Unigram: a score per piece, no merges
        return _scored_table(rows, cast(ScoredTokenizer, _tok), order=order)
    return pd.DataFrame(
        {
            "ID": [r.id for r in rows],
            "token": [visible(show_bytes(r.token)) for r in rows],
            "len": [r.length for r in rows],
            "merge": pd.array([None if r.rank is None else merge_number(r.rank) for r in rows],
                              dtype="Int64"),
            "left": [None if r.left is None else visible(show_bytes(r.left)) for r in rows],
            "right": [None if r.right is None else visible(show_bytes(r.right)) for r in rows],
            "bytes": [r.token.hex(" ") for r in rows],
            **_spelling(rows, _tok),
        }
    )


def _scored_table(rows: list[VocabRow], tok: ScoredTokenizer, *, order: str) -> pd.DataFrame:
    """A Unigram vocabulary: each piece's score (a log-probability) instead of merge columns."""
    scores = {r.id: tok.score(r.id) for r in rows}
    if order == "highest score first":
        rows = sorted(rows, key=lambda r: (scores[r.id] is None, -(scores[r.id] or 0.0), r.id))
    return pd.DataFrame(
        {
            "ID": [r.id for r in rows],
            "token": [visible(show_bytes(r.token)) for r in rows],
            "len": [r.length for r in rows],
            "score": pd.array([scores[r.id] for r in rows], dtype="Float64"),
            "bytes": [r.token.hex(" ") for r in rows],
            **_spelling(rows, tok),
        }
    )


def _spelling(rows: list[VocabRow], tok: TokenizerInterface) -> dict[str, list[str]]:
    """How the tokenizer's files write each token (``id_to_piece``): a real model's own
    pieces (``▁the``, ``<0x0A>``, ``##ing``), GPT-2's byte-to-unicode form for byte-level
    BPE."""
    spell = tok.id_to_piece
    return {spelling_name(tok.capabilities.byte_level): [spell(r.id) for r in rows]}


@st.cache_resource(max_entries=4)
def _vocab_rows(tok_key: str, _tok: DetailedTokenizer) -> list[VocabRow]:
    return vocab_rows(_tok.vocab, _tok.merges)


@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def length_counts(tok_key: str, _tok: DetailedTokenizer) -> dict[int, int]:
    """How many tokens have each byte length."""
    return count_lengths(_tok.vocab)


# ---------------------------------------------------------------------------------------------
# Replay: a tokenizer after its first k merges (core.explain.replay)


@st.cache_resource(max_entries=8, ttl=3600, show_spinner="Replaying the merges on the text…")
def replay(tok_key: str, text: str, _tok: Tokenizer) -> TextReplay:
    """``core.explain.replay.TextReplay`` of ``text`` (read-only: every step answers from it)."""
    return TextReplay(_tok, text)


@st.cache_data(max_entries=256, ttl=3600, show_spinner=False)
def replay_step(tok_key: str, text: str, k: int,
                _tok: Tokenizer) -> tuple[EncodingDetails, list[int]]:
    """The text's ``EncodingDetails`` at step ``k``, and the indexes of the tokens step
    ``k`` made."""
    rep = replay(tok_key, text, _tok)
    return rep.details(k), rep.merged_at(k)


@st.cache_data(max_entries=8, ttl=3600, show_spinner="Counting the vocabulary at each step…")
def replay_sizes(tok_key: str, _tok: Tokenizer) -> list[int]:
    """The vocab size at every step (``core.explain.replay.vocab_sizes``)."""
    return vocab_sizes(_tok)


@st.cache_data(max_entries=8, ttl=3600, show_spinner=False)
def merge_lengths(tok_key: str, _tok: DetailedTokenizer) -> list[int]:
    """The length in bytes of the token each merge makes, by rank."""
    return [len(a) + len(b) for a, b in _tok.merges]


@st.cache_data(max_entries=64, ttl=3600, show_spinner=False)
def merge_length_chart(tok_key: str, step: int, _tok: DetailedTokenizer) -> str:
    """Replay's chart of the length of each merge's token, its cursor at ``step``: drawn once
    per tokenizer and step for every session (it was half of a new visitor's run of Replay,
    and every rerun that types in the sample text drew it again)."""
    return charts.merge_length_chart(merge_lengths(tok_key, _tok), cursor=step)


# ---------------------------------------------------------------------------------------------
# The saved-tokenizer library (server-wide, on disk; see core/services/library.py)

#: Key in .streamlit/secrets.toml naming the library folder (TOKPLAY_LIBRARY_DIR wins).
LIBRARY_SECRET = "library_dir"


def library_root() -> str:
    """Where the library lives: ``$TOKPLAY_LIBRARY_DIR``, else ``library_dir`` in Streamlit's
    secrets, else core's default (a per-user data folder outside the repository)."""
    configured = os.environ.get(LIBRARY_ENV_VAR, "").strip()
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    secret = _library_secret()
    if secret:
        return os.path.abspath(os.path.expanduser(secret))
    return str(default_library_dir())


@st.cache_resource(max_entries=1, ttl=60, show_spinner=False)
def _library_secret() -> str:
    """``library_dir`` in Streamlit's secrets, ``""`` if unset. Read at most once a minute:
    each read looks for the secrets files on disk, and pickers ask for the library many times
    per run."""
    try:
        secret = st.secrets.get(LIBRARY_SECRET)
    except Exception:  # noqa: BLE001 - no secrets file: that is the usual case
        secret = None
    return secret.strip() if isinstance(secret, str) else ""


def library() -> TokenizerLibrary:
    """The server's ``TokenizerLibrary`` (created on first use; raises ``LibraryError`` with
    the fix when its folder cannot be created, or in the static build, which has none)."""
    if not runtime.keeps_work():
        raise LibraryError("the static version of the playground has no library: it runs in "
                           "your browser, with no server to keep anything")
    return _library_at(library_root())


@st.cache_resource(max_entries=4, show_spinner=False)
def _library_at(root: str) -> TokenizerLibrary:
    return TokenizerLibrary(root)


def library_exists() -> bool:
    """True once something was saved (listing never creates the folder); never in the
    static build (``ui.runtime``)."""
    if not runtime.keeps_work():
        return False
    return os.path.isfile(os.path.join(library_root(), "library.sqlite3"))


def library_entries() -> list[Entry]:
    """Saved tokenizers, newest first ([] while the library is empty or unreadable)."""
    if not library_exists():
        return []
    return _library_entries(library_root())


@st.cache_data(max_entries=4, ttl=2, show_spinner=False)
def _library_entries(root: str) -> list[Entry]:
    # subtle: a short ttl, not invalidation alone: another session (or process) may save
    try:
        return list(_library_at(root).list())
    except Exception:  # noqa: BLE001 - a broken library must not break every picker
        return []


def forget_library_entries() -> None:
    """Drop the cached listing (after this session saved or deleted something)."""
    _library_entries.clear()


@st.cache_resource(max_entries=8, show_spinner="Loading the saved tokenizer…")
def library_tokenizer(root: str, entry_id: str) -> Tokenizer:
    """A saved tokenizer as a ``core.Tokenizer`` (cached by ID: IDs are content hashes, so an
    ID always names the same tokenizer). Raises ``core.LibraryError`` subclasses."""
    lib = _library_at(root)
    entry = lib.get(entry_id)
    vocab, merges, specials, pattern = lib.load(entry_id)
    return Tokenizer(vocab, merges, specials or None, pattern=pattern, name=entry.name)
