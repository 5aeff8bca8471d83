"""The seeds' other tokenizers, behind the same encode/decode interface as :class:`Tokenizer`.

They exist so the Compare page can show *why* byte-level BPE won: a word-level vocabulary
turns every unseen word into ``<|unk|>``, and a character-level BPE still has no ID for a
character it never saw, while byte-level BPE covers any string with 256 base tokens.

- :class:`WordTokenizer`: "LLMs from scratch" ``SimpleTokenizerV2`` (chapter 2).
- :class:`CharBPETokenizer`: the Hugging Face NLP course's BPE chapter (characters, not bytes).
- :func:`coverage_stats`: unknown-token rate and tokens per character of any of these.

Each is a :class:`core.interface.TokenizerInterface` with no capability beyond encoding and
decoding (no byte details, no export): ``encode``, ``decode``, ``n_vocab``, ``name``,
``unk_id`` (``None`` when there is no unknown token), ``id_to_piece`` and ``fingerprint``,
plus ``id_to_token(id) -> str`` and ``tokenize(text)`` as their sources have them.

>>> tok = WordTokenizer.train("the cat sat. the end")
>>> tok.encode("the dog sat.")
[4, 6, 3, 0]
>>> tok.decode(tok.encode("the dog sat."))
'the <|unk|> sat.'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.basics import check_id
from core.engine.bytes_unicode import bytes_to_unicode
from core.engine.fingerprint import fingerprint_of
from core.engine.pretokenize import pretokenize, split_on_specials
from core.engine.template import Template
from core.errors import PlaygroundError, TrainingConfigError
from core.interface import Capabilities, TokenizerInterface

ENDOFTEXT = "<|endoftext|>"
UNK = "<|unk|>"


def _check_ids(ids: Iterable[object]) -> list[int]:
    """IDs as a list; anything that is not an integer is a clear error naming the item."""
    return [check_id(item, position) for position, item in enumerate(ids)]


def _as_texts(corpus: str | Iterable[str]) -> Iterable[str]:
    return [corpus] if isinstance(corpus, str) else corpus


# ---------------------------------------------------------------------------------------------
# Word level: "LLMs from scratch" SimpleTokenizerV2
# ---------------------------------------------------------------------------------------------

_WORD_SPLIT = re.compile(r'([,.:;?_!"()\']|--|\s)')
_SPACE_BEFORE_PUNCT = re.compile(r'\s+([,.:;?!"()\'])')


def split_words(text: str) -> list[str]:
    """SimpleTokenizerV2's pre-processing: split on punctuation, ``--`` and whitespace,
    keep the punctuation, strip and drop empty pieces.

    >>> split_words('Hello, world. Is this-- a test?')
    ['Hello', ',', 'world', '.', 'Is', 'this', '--', 'a', 'test', '?']
    """
    return [piece.strip() for piece in _WORD_SPLIT.split(text) if piece.strip()]


class WordTokenizer:
    """A word-level tokenizer: one ID per word or punctuation mark, ``<|unk|>`` for the rest.

    ``vocab`` maps word -> ID (the book's ``str_to_int``) and must contain ``unk_token``.
    """

    def __init__(
        self, vocab: Mapping[str, int], *, unk_token: str = UNK, name: str = "word-level"
    ) -> None:
        if unk_token not in vocab:
            raise TrainingConfigError(
                f"the word vocabulary has no {unk_token!r} entry; add it so unknown words "
                "have an ID"
            )
        self.str_to_int: dict[str, int] = dict(vocab)
        self.int_to_str: dict[int, str] = {i: s for s, i in vocab.items()}
        self.unk_token = unk_token
        self.unk_id: int | None = vocab[unk_token]
        self.name = name

    @classmethod
    def train(
        cls,
        corpus: str | Iterable[str],
        *,
        special_tokens: Sequence[str] = (ENDOFTEXT, UNK),
        name: str = "word-level",
    ) -> WordTokenizer:
        """The book's vocabulary: the corpus's sorted unique words, then the special tokens.

        >>> WordTokenizer.train("b a, b").str_to_int
        {',': 0, 'a': 1, 'b': 2, '<|endoftext|>': 3, '<|unk|>': 4}
        """
        specials = list(dict.fromkeys(special_tokens))
        if UNK not in specials:
            specials.append(UNK)
        words: set[str] = set()
        for text in _as_texts(corpus):
            words.update(split_words(text))
        # subtle: a corpus joined with <|endoftext|> contains it as a "word"; keep one ID
        all_tokens = sorted(words - set(specials)) + specials
        return cls({token: i for i, token in enumerate(all_tokens)}, name=name)

    @property
    def n_vocab(self) -> int:
        return len(self.str_to_int)

    def tokenize(self, text: str) -> list[str]:
        """The words of ``text``, unknown ones replaced by ``<|unk|>``."""
        return [w if w in self.str_to_int else self.unk_token for w in split_words(text)]

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """One ID per word; ``add_special_tokens`` adds nothing (the book's tokenizer has
        no template)."""
        return [self.str_to_int[w] for w in self.tokenize(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """Join with spaces, then remove the space before punctuation (as the book does);
        an ID outside the vocab becomes U+FFFD."""
        text = " ".join(self.int_to_str.get(i, "\ufffd") for i in _check_ids(ids))
        return _SPACE_BEFORE_PUNCT.sub(r"\1", text)

    def id_to_token(self, token_id: int) -> str:
        return self.int_to_str.get(token_id, "\ufffd")

    # -- the door every tokenizer shares (core.interface) ------------------------------------

    kind = "word-level baseline"
    capabilities = Capabilities()
    template = Template()
    _fingerprint: str | None = None  # computed on first use

    def id_to_piece(self, token_id: int) -> str:
        """The word (or special token) of an ID; ``""`` outside the vocabulary."""
        return self.int_to_str.get(token_id, "")

    def fingerprint(self) -> str:
        """A content hash of the vocabulary and the unknown token.

        >>> WordTokenizer.train("a b").fingerprint() == WordTokenizer.train("a c").fingerprint()
        False
        """
        if self._fingerprint is None:
            self._fingerprint = fingerprint_of("WordTokenizer", self.str_to_int, self.unk_token)
        return self._fingerprint


# ---------------------------------------------------------------------------------------------
# Character level BPE: the Hugging Face course's BPE chapter
# ---------------------------------------------------------------------------------------------


def show_chars(text: str) -> str:
    """Spell ASCII whitespace/control characters the way GPT-2's byte map does (space -> ``Ġ``,
    newline -> ``Ċ``), as the course's pre-tokenizer shows them; other characters unchanged.

    >>> show_chars(" is\\n")
    'ĠisĊ'
    """
    table = bytes_to_unicode()
    return "".join(table[ord(c)] if ord(c) < 128 else c for c in text)


_CACHE_LIMIT = 8192  # pre-tokens remembered per tokenizer (bounded: a server runs for weeks)


class CharBPETokenizer:
    """BPE on characters: an alphabet of the corpus's characters plus merges.

    Tokens are kept as real text; :meth:`id_to_token`, :meth:`tokenize` and :attr:`merges`
    show them as the course does (``"Ġis"``). Characters outside the alphabet become
    ``unk_token`` (the course has none: pass ``unk_token=None`` to reproduce it exactly, and
    then an unknown character is an error).
    """

    def __init__(
        self,
        alphabet: Iterable[str],
        merges: Sequence[tuple[str, str]] = (),
        *,
        special_tokens: Sequence[str] = (ENDOFTEXT,),
        unk_token: str | None = UNK,
        pattern: str = "gpt2",
        name: str = "char-BPE",
    ) -> None:
        specials = list(dict.fromkeys(special_tokens))
        if unk_token is not None and unk_token not in specials:
            specials.append(unk_token)
        # subtle: the course sorts the alphabet as shown ('Ġ' after the letters), which fixes IDs
        chars = sorted(set(alphabet) - set(specials), key=show_chars)
        self.special_tokens: list[str] = specials
        self.unk_token = unk_token
        self.pattern = pattern
        self.name = name
        self._tokens: list[str] = specials + chars
        self._merges: list[tuple[str, str]] = [(a, b) for a, b in merges]
        self._tokens += [a + b for a, b in self._merges]
        self._ids: dict[str, int] = {}
        for i, token in enumerate(self._tokens):
            self._ids.setdefault(token, i)
        self._alphabet = frozenset(chars)
        self._ranks = {pair: rank for rank, pair in enumerate(self._merges)}
        self._specials_set = frozenset(specials)
        self.unk_id: int | None = None if unk_token is None else self._ids[unk_token]
        self._cache: dict[str, tuple[str | None, ...]] = {}

    # -- training ---------------------------------------------------------------------------

    @classmethod
    def train(
        cls,
        corpus: str | Iterable[str],
        vocab_size: int,
        *,
        special_tokens: Sequence[str] = (ENDOFTEXT,),
        unk_token: str | None = UNK,
        pattern: str = "gpt2",
        name: str = "char-BPE",
    ) -> CharBPETokenizer:
        """Learn merges until the vocab (specials + alphabet + merges) has ``vocab_size`` tokens.

        As in the course: the most frequent adjacent pair wins, ties go to the pair seen first
        (words in order of first appearance, left to right), and merges stay inside pre-tokens.
        """
        specials = list(dict.fromkeys(special_tokens))
        if unk_token is not None and unk_token not in specials:
            specials.append(unk_token)
        word_freqs: dict[str, int] = {}
        for text in _as_texts(corpus):
            for piece, is_special in split_on_specials(text, specials):
                if is_special:
                    continue
                for word in pretokenize(piece, pattern):
                    word_freqs[word] = word_freqs.get(word, 0) + 1
        alphabet = {c for word in word_freqs for c in word}
        base = len(specials) + len(alphabet)
        if vocab_size < base:
            raise TrainingConfigError(
                f"vocab size {vocab_size} is smaller than the {len(specials)} special tokens "
                f"plus the corpus's {len(alphabet)} characters; use at least {base}"
            )
        merges = _learn_char_merges(word_freqs, vocab_size - base)
        return cls(alphabet, merges, special_tokens=specials, unk_token=unk_token,
                   pattern=pattern, name=name)  # fmt: skip

    # -- encoding ---------------------------------------------------------------------------

    @property
    def n_vocab(self) -> int:
        return len(self._tokens)

    @property
    def merges(self) -> list[tuple[str, str]]:
        """Merges as the course prints them (``('Ġ', 't')``)."""
        return [(show_chars(a), show_chars(b)) for a, b in self._merges]

    @property
    def tokens(self) -> list[str]:
        """Every token as shown, in ID order."""
        return [self.id_to_token(i) for i in range(len(self._tokens))]

    def _split(self, word: str) -> tuple[str | None, ...]:
        """Apply the merges to one pre-token; ``None`` marks an unknown character."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        parts: list[str | None] = [c if c in self._alphabet else None for c in word]
        while len(parts) > 1:
            # the lowest-rank pair present is the next merge the course's loop would apply
            best = min(
                (self._ranks.get((a, b), len(self._ranks)) for a, b in zip(parts, parts[1:])
                 if a is not None and b is not None),  # fmt: skip
                default=len(self._ranks),
            )
            if best == len(self._ranks):
                break
            left, right = self._merges[best]
            parts = _merge_pair(parts, left, right)
        result = tuple(parts)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[word] = result
        return result

    def _pieces(self, text: str) -> list[str | None]:
        out: list[str | None] = []
        for piece, is_special in split_on_specials(text, self.special_tokens):
            if is_special:
                out.append(piece)
                continue
            for word in pretokenize(piece, self.pattern):
                out.extend(self._split(word))
        return out

    def tokenize(self, text: str) -> list[str]:
        """Tokens as the course shows them.

        >>> tok = CharBPETokenizer("abc ", [(" ", "a")], unk_token=None)
        >>> tok.tokenize("a ab")
        ['a', 'Ġa', 'b']
        """
        return [
            (self.unk_token or "\ufffd") if p is None
            else p if p in self._specials_set else show_chars(p)
            for p in self._pieces(text)
        ]  # fmt: skip

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """One ID per token; ``add_special_tokens`` adds nothing (the course's tokenizer
        has no template)."""
        ids: list[int] = []
        for piece in self._pieces(text):
            if piece is None:
                if self.unk_id is None:
                    bad = next(c for c in text if c not in self._alphabet)
                    raise PlaygroundError(
                        f"character {bad!r} (U+{ord(bad):04X}) is not in this tokenizer's "
                        "alphabet and it has no unknown token; train it with unk_token set"
                    )
                ids.append(self.unk_id)
            else:
                ids.append(self._ids[piece])
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """Concatenate the tokens' text; an ID outside the vocab becomes U+FFFD."""
        n = len(self._tokens)
        return "".join(self._tokens[i] if 0 <= i < n else "\ufffd" for i in _check_ids(ids))

    def id_to_token(self, token_id: int) -> str:
        if not 0 <= token_id < len(self._tokens):
            return "\ufffd"
        token = self._tokens[token_id]
        return token if token in self._specials_set else show_chars(token)

    # -- the door every tokenizer shares (core.interface) ------------------------------------

    kind = "char-level BPE baseline"
    capabilities = Capabilities()
    template = Template()
    _fingerprint: str | None = None  # computed on first use

    def id_to_piece(self, token_id: int) -> str:
        """The token as the course shows it (``"Ġis"``); ``""`` outside the vocabulary.

        >>> CharBPETokenizer("ab ", [(" ", "a")], unk_token=None).id_to_piece(4)
        'Ġa'
        """
        return self.id_to_token(token_id) if 0 <= token_id < len(self._tokens) else ""

    def fingerprint(self) -> str:
        """A content hash of the tokens, merges, special and unknown tokens and pattern."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint_of(
                "CharBPETokenizer", self._tokens, self._merges, self.special_tokens,
                self.unk_token, self.pattern,
            )  # fmt: skip
        return self._fingerprint


def _learn_char_merges(word_freqs: Mapping[str, int], n_merges: int) -> list[tuple[str, str]]:
    """The course's training loop, made incremental: same merges, same tie-breaking.

    >>> _learn_char_merges({"aab": 2, "ab": 1}, 2)
    [('a', 'b'), ('a', 'ab')]
    """
    words = list(word_freqs)
    freqs = [word_freqs[w] for w in words]
    splits: list[list[str]] = [list(w) for w in words]
    counts: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], set[int]] = {}
    for idx, split in enumerate(splits):
        for pair in zip(split, split[1:]):
            counts[pair] = counts.get(pair, 0) + freqs[idx]
            where.setdefault(pair, set()).add(idx)

    def first_seen(pair: tuple[str, str]) -> tuple[int, int]:
        # the course keeps the first pair its scan meets: earliest word, then leftmost position
        idx = min(where[pair])
        split = splits[idx]
        pos = next(i for i in range(len(split) - 1) if (split[i], split[i + 1]) == pair)
        return idx, pos

    merges: list[tuple[str, str]] = []
    while len(merges) < n_merges and counts:
        top = max(counts.values())
        tied = [p for p, c in counts.items() if c == top]
        best = tied[0] if len(tied) == 1 else min(tied, key=first_seen)
        left, right = best
        merges.append(best)
        for idx in list(where.get(best, ())):
            split = splits[idx]
            for pair in zip(split, split[1:]):
                counts[pair] -= freqs[idx]
                if counts[pair] == 0:
                    del counts[pair]
                where[pair].discard(idx)
            merged = _merge_pair(split, left, right)
            splits[idx] = merged
            for pair in zip(merged, merged[1:]):
                counts[pair] = counts.get(pair, 0) + freqs[idx]
                where.setdefault(pair, set()).add(idx)
        for pair in [p for p, s in where.items() if not s]:
            del where[pair]
    return merges


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CoverageStats:
    """How well a tokenizer covers a text (for the Compare page)."""

    n_chars: int
    n_tokens: int
    n_unknown: int          # tokens that are the unknown token
    unknown_rate: float     # n_unknown / n_tokens (0.0 for no tokens)
    tokens_per_char: float  # n_tokens / n_chars (0.0 for empty text)
    round_trip: bool        # decode(encode(text)) == text


def coverage_stats(tokenizer: TokenizerInterface, text: str) -> CoverageStats:
    """Unknown-token rate and tokens per character of ``tokenizer`` on ``text``.

    >>> s = coverage_stats(WordTokenizer.train("a b"), "a c")
    >>> s.n_unknown, s.unknown_rate, s.round_trip
    (1, 0.5, False)
    """
    ids = tokenizer.encode(text)
    unk_id = tokenizer.unk_id  # None: it has no unknown token (or does not say)
    n_unknown = 0 if unk_id is None else sum(1 for i in ids if i == unk_id)
    return CoverageStats(
        n_chars=len(text),
        n_tokens=len(ids),
        n_unknown=n_unknown,
        unknown_rate=n_unknown / len(ids) if ids else 0.0,
        tokens_per_char=len(ids) / len(text) if text else 0.0,
        round_trip=tokenizer.decode(ids) == text,
    )


def _merge_pair(parts: list[Any], left: str, right: str) -> list[Any]:
    """Replace every ``left, right`` neighbour pair by its concatenation, left to right.

    >>> _merge_pair(["a", "b", "a", "b", "c"], "a", "b")
    ['ab', 'ab', 'c']
    """
    merged: list[Any] = []
    i = 0
    while i < len(parts):
        if i + 1 < len(parts) and parts[i] == left and parts[i + 1] == right:
            merged.append(left + right)
            i += 2
        else:
            merged.append(parts[i])
            i += 1
    return merged
