"""Evaluating a tokenizer on a text: bytes, characters and words per token, which tokens it
uses, and (for a byte-level BPE tokenizer) how the compression grows merge by merge.

The text comes as an iterable of strings (the chunks of a file), so a text of any size costs
a bounded amount of memory: :func:`safe_pieces` gathers the chunks up to places where the
tokenizer's output cannot depend on what follows, and each piece is encoded and dropped.
Nothing here prints or draws; progress leaves through a callback.

>>> from core.formats.presets import load_preset
>>> result = evaluate(load_preset("gpt2"), ["the cat and the dog, ", "the end."], name="pets")
>>> result.stats.tokens, result.stats.bytes, round(result.stats.bytes_per_token, 2)
(9, 29, 3.22)
>>> [(load_preset("gpt2").decode([i]), n) for i, n in top_tokens(result.usage, 2)]
[(' the', 2), (',', 1)]

The "parity" of multilingual-tokenizer papers compares the tokens of the same text in two
languages; :func:`parallel_texts` is a small parallel set bundled with the package
(``core/data/parallel.json``) and :func:`parity` the ratio.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from core.engine.basics import utf8
from core.engine.pretokenize import (
    PATTERNS,
    cut_outside_specials,
    resolve_pattern,
    special_splitter,
)
from core.errors import PlaygroundError

if TYPE_CHECKING:
    from core.interface import TokenizerInterface

__all__ = [
    "Evaluation",
    "TextStats",
    "cuts_exactly",
    "evaluate",
    "longest_used",
    "parallel_source",
    "parallel_texts",
    "parity",
    "safe_pieces",
    "token_bytes",
    "top_tokens",
    "unused_tokens",
]

#: Characters gathered before a cut is looked for (a piece is encoded in one call).
PIECE_CHARS = 1 << 16


# ----------------------------------------------------------------------------------------
# The numbers
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextStats:
    """One tokenizer on one text: sizes and token count. ``exact`` is False when a tokenizer
    whose output may depend on the whole text (a SentencePiece model's dummy prefix, a
    custom regex) had to be fed a long text in pieces cut at line breaks.

    >>> s = TextStats("t", bytes=12, chars=10, words=2, tokens=4)
    >>> s.bytes_per_token, s.chars_per_token, s.tokens_per_word
    (3.0, 2.5, 2.0)
    """

    name: str
    bytes: int
    chars: int
    words: int
    tokens: int
    exact: bool = True

    @property
    def bytes_per_token(self) -> float:
        """UTF-8 bytes per token (CS336's compression ratio); 0.0 for no tokens."""
        return self.bytes / self.tokens if self.tokens else 0.0

    @property
    def chars_per_token(self) -> float:
        """Characters (code points) per token; 0.0 for no tokens."""
        return self.chars / self.tokens if self.tokens else 0.0

    @property
    def tokens_per_word(self) -> float:
        """Tokens per whitespace-separated word ("fertility"); 0.0 for no words."""
        return self.tokens / self.words if self.words else 0.0


@dataclass(frozen=True)
class Evaluation:
    """:class:`TextStats`, how often each token ID occurs (``usage``) and, when asked for,
    the token count after each number of merges (``curve[k]``, ``k`` from 0 to all; an
    ``array`` of 8-byte ints: o200k_base's 200,000 steps take 1.6 MB, not 8)."""

    stats: TextStats
    usage: Mapping[int, int] = field(default_factory=dict)
    curve: Sequence[int] | None = None


# ----------------------------------------------------------------------------------------
# Cutting a long text where the tokens cannot change
# ----------------------------------------------------------------------------------------


def cuts_exactly(tok: TokenizerInterface) -> bool:
    """True when :func:`core.engine.pretokenize.last_cut`'s places are safe for ``tok``: byte-level
    BPE with one of the built-in patterns (no pre-token crosses them)."""
    caps = tok.capabilities
    return caps.byte_level and caps.details and resolve_pattern(tok.pattern) in PATTERNS.values()  # type: ignore[attr-defined]


def _line_cut(buf: str, lo: int, hi: int) -> int:
    """After the last line break before ``hi`` that a non-space follows (0 if none after
    ``lo``): whole words and lines, for tokenizers whose exact cuts are unknown."""
    i = min(hi, len(buf) - 1)
    while (i := buf.rfind("\n", lo, i)) >= 0:
        if not buf[i + 1].isspace():
            return i + 1
    return 0


def safe_pieces(tok: TokenizerInterface, chunks: Iterable[str], *,
                piece_chars: int = PIECE_CHARS) -> Iterator[tuple[str, bool]]:
    """``chunks`` joined and cut again into pieces of about ``piece_chars`` characters:
    ``(piece, exact)``, where ``exact`` says that encoding the pieces one by one gives
    exactly the IDs of the whole text. Byte-level BPE with a built-in pattern is always
    exact; other tokenizers are cut after line breaks (``exact=False`` from the first such
    cut). A run with no cut in it is kept whole.

    >>> from core.engine.tokenizer import Tokenizer
    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    >>> [p for p, _ in safe_pieces(tok, ["ab cd", " ef"], piece_chars=2)]
    ['ab', ' cd', ' ef']
    """
    if piece_chars < 1:
        raise PlaygroundError(f"piece_chars must be 1 or more, not {piece_chars!r}")
    if cuts_exactly(tok):
        specials = special_splitter(tuple(tok.special_tokens))  # type: ignore[attr-defined]
        longest = max((len(s) for s in tok.special_tokens), default=0)  # type: ignore[attr-defined]

        def cut_at(buf: str, lo: int, hi: int) -> int:
            return cut_outside_specials(
                buf, hi, lo=lo, specials=specials, longest_special=longest
            )
    else:
        cut_at = _line_cut
    exact_rule = cuts_exactly(tok)
    exact = True
    parts: list[str] = []
    size, threshold = 0, piece_chars
    for index, chunk in enumerate(chunks):
        if not isinstance(chunk, str):
            raise PlaygroundError(f"item {index} of the text is {type(chunk).__name__}, not str")
        parts.append(chunk)
        size += len(chunk)
        if size < threshold:
            continue
        buf, start = "".join(parts), 0
        while len(buf) - start >= piece_chars:
            cut, window = 0, piece_chars
            while not cut:  # no cut in the window: look twice as far (amortised O(n))
                cut = cut_at(buf, start, start + window)
                if start + window >= len(buf):
                    break
                window *= 2
            if not cut:
                break
            exact = exact and exact_rule
            yield buf[start:cut], exact
            start = cut
        buf = buf[start:]
        parts, size = [buf], len(buf)
        # subtle: grow the threshold while no cut is found, so a long run without one costs
        # O(n log n) joins, not O(n^2)
        threshold = max(piece_chars, 2 * size)
    if tail := "".join(parts):
        yield tail, exact


# ----------------------------------------------------------------------------------------
# Evaluating
# ----------------------------------------------------------------------------------------


def evaluate(tok: TokenizerInterface, chunks: Iterable[str], *, name: str = "",
             curve: bool = False, usage: bool = True,
             on_progress: Callable[[int], None] | None = None,
             piece_chars: int = PIECE_CHARS) -> Evaluation:
    """Encode the text ``chunks`` make (without the model's BOS/EOS template) and count.

    ``usage=False`` skips counting each token ID (a fifth of the time; ``usage`` is then
    empty). ``curve=True`` also counts the tokens after each number of merges (needs
    ``tok.capabilities.replay``; see :class:`core.explain.replay.StepCounts`). ``on_progress(bytes)``
    is called after each piece with the UTF-8 bytes done so far. Memory: a piece, one count
    per token ID used, and for the curve one count per distinct pre-token.

    >>> from core.formats.presets import load_preset
    >>> ev = evaluate(load_preset("gpt2"), ["hello hello"], curve=True)
    >>> ev.stats.tokens, ev.curve[0], ev.curve[-1], len(ev.curve)   # 50,000 merges: 50,001 steps
    (2, 11, 2, 50001)
    """
    steps = None
    if curve:
        from core.explain.replay import StepCounts, replay_problem

        if problem := replay_problem(tok):
            raise PlaygroundError(problem)
        steps = StepCounts(tok)  # type: ignore[arg-type]
    counts: Counter[int] = Counter()
    n_bytes = n_chars = n_words = n_tokens = 0
    exact = True
    for piece, exact in safe_pieces(tok, chunks, piece_chars=piece_chars):  # noqa: B007 - read below
        ids = tok.encode(piece)
        if usage:
            counts.update(ids)
        n_tokens += len(ids)
        n_chars += len(piece)
        n_words += len(piece.split())
        n_bytes += len(utf8(piece))
        if steps is not None:
            steps.add(piece)
        if on_progress is not None:
            on_progress(n_bytes)
    stats = TextStats(name, n_bytes, n_chars, n_words, n_tokens, exact)
    return Evaluation(stats, dict(counts), None if steps is None else array("q", steps.counts()))


# ----------------------------------------------------------------------------------------
# Which tokens a text uses
# ----------------------------------------------------------------------------------------


def top_tokens(usage: Mapping[int, int], n: int = 20) -> list[tuple[int, int]]:
    """The ``n`` most used token IDs with their counts (ties: smaller ID first).

    >>> top_tokens({5: 2, 3: 2, 9: 7}, 2)
    [(9, 7), (3, 2)]
    """
    return sorted(usage.items(), key=lambda item: (-item[1], item[0]))[:max(n, 0)]


def unused_tokens(tok: TokenizerInterface, usage: Mapping[int, int]) -> list[int]:
    """IDs of ``tok``'s vocabulary that the text never uses, in ID order (IDs with no token,
    the gaps some vocabularies have, are left out).

    >>> from core.engine.tokenizer import Tokenizer
    >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
    >>> len(unused_tokens(tok, {97: 3})), unused_tokens(tok, {})[:2]
    (255, [0, 1])
    """
    return [i for i in range(tok.n_vocab) if i not in usage and tok.id_to_piece(i) != ""]


def token_bytes(tok: TokenizerInterface, token_id: int) -> bytes:
    """The bytes a token stands for: the vocabulary's when ``tok`` declares it, else its
    decoded text's.

    >>> from core.formats.presets import load_preset
    >>> token_bytes(load_preset("gpt2"), 447)      # half of a UTF-8 character
    b'\xe2\x80'
    """
    if tok.capabilities.details:
        return tok.vocab.get(token_id, b"")  # type: ignore[attr-defined]
    return tok.decode([token_id]).encode("utf-8")


def longest_used(tok: TokenizerInterface, usage: Mapping[int, int], n: int = 20
                 ) -> list[tuple[int, bytes, int]]:
    """The ``n`` longest tokens (in bytes) the text uses: ``(ID, bytes, count)``.

    >>> from core.formats.presets import load_preset
    >>> tok = load_preset("gpt2")
    >>> longest_used(tok, {tok.encode(" hello")[0]: 2, 64: 1}, 1)
    [(23748, b' hello', 2)]
    """
    rows = [(i, token_bytes(tok, i), count) for i, count in usage.items()]
    return sorted(rows, key=lambda r: (-len(r[1]), r[0]))[:max(n, 0)]


# ----------------------------------------------------------------------------------------
# The same text in several languages
# ----------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _parallel() -> dict[str, object]:
    data = resources.files("core").joinpath("data/parallel.json").read_text(encoding="utf-8")
    return json.loads(data)


def parallel_texts() -> dict[str, tuple[str, str]]:
    """The bundled parallel set: language code -> (language name, text), English first.

    >>> texts = parallel_texts()
    >>> list(texts)[:3], texts["de"][0]
    (['en', 'de', 'fr'], 'German')
    """
    texts = _parallel()["texts"]
    return {code: (entry["name"], entry["text"]) for code, entry in texts.items()}  # type: ignore[attr-defined]


def parallel_source() -> str:
    """Where the parallel set comes from, in one sentence (for captions and the README)."""
    return str(_parallel()["source"])


def parity(tokens: Mapping[str, int], *, reference: str = "en") -> dict[str, float]:
    """Each language's token count divided by the reference language's: 1.0 is as cheap as
    English, 2.0 costs twice the tokens for the same content.

    >>> parity({"en": 50, "de": 60, "ja": 100})
    {'en': 1.0, 'de': 1.2, 'ja': 2.0}
    """
    base = tokens.get(reference)
    if not base:
        raise PlaygroundError(f"parity needs a non-empty {reference!r} text to compare with")
    return {code: count / base for code, count in tokens.items()}
