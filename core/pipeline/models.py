"""Models: the stage that turns one pre-token (a "word") into tokens.

Three Hugging Face models, each a twin of the Rust code in ``tokenizers/src/models``:

- :class:`BPEModel`: BPE over *strings* (not bytes). A word starts as its characters
  (``continuing_subword_prefix`` on all but the first, ``end_of_word_suffix`` on the last);
  a character missing from the vocab becomes ``<0xNN>`` byte tokens (``byte_fallback``, only
  if every byte has one) or the unknown token (``fuse_unk`` joins a run of them); then
  merges apply lowest rank first, leftmost first on ties.
- :class:`WordPieceModel`: greedy longest-match-first (BERT); a word with any piece
  missing, or longer than ``max_input_chars_per_word``, is the unknown token as a whole.
- :class:`WordLevelModel`: the whole word is a token, or it is the unknown token.

Each has ``tokenize(word) -> [(id, start, end), ...]`` with character offsets into the
word, a ``vocab`` (token string -> ID) and ``id_to_token``.

>>> bpe = BPEModel({"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}, [("a", "b"), ("ab", "c")])
>>> bpe.tokenize("abcab")
[(4, 0, 3), (3, 3, 5)]
>>> wp = WordPieceModel({"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3})
>>> wp.tokenize("unaffable"), wp.tokenize("unknown")
([(1, 0, 2), (2, 2, 5), (3, 5, 9)], [(0, 0, 7)])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.bpe import merge, merge_steps
from core.errors import FormatError, PlaygroundError

__all__ = [
    "BPEModel",
    "BPEStep",
    "Model",
    "Token",
    "WordLevelModel",
    "WordPieceModel",
    "model_from_json",
]

#: One token of a word: ``(id, start, end)``, character offsets into the word.
Token = tuple[int, int, int]

#: Entries in each model's word cache (cleared wholesale when full, as in
#: :class:`core.tokenizer.Tokenizer`; ~100 bytes an entry).
DEFAULT_CACHE_SIZE = 1 << 16
#: Longer words are not cached. Hugging Face uses 256 *bytes* (``MAX_LENGTH``); a
#: SentencePiece-style tokenizer with no pre-tokenizer sends whole lines here, and those
#: rarely repeat.
_MAX_CACHED_WORD = 256


Model = Any  # BPEModel | WordPieceModel | WordLevelModel, or any object with tokenize()


class _WordCache(dict):  # type: ignore[type-arg]
    """``dict`` of word -> tokens that computes misses and clears itself when full."""

    __slots__ = ("_compute", "_maxsize")

    def __init__(
        self, compute: Callable[[str], tuple[Token, ...]], maxsize: int
    ) -> None:
        super().__init__()
        self._compute = compute
        self._maxsize = maxsize

    def __missing__(self, word: str) -> tuple[Token, ...]:
        value = self._compute(word)
        if len(word) <= _MAX_CACHED_WORD and self._maxsize:
            if len(self) >= self._maxsize:
                self.clear()
            self[word] = value
        return value


def _reverse(vocab: Mapping[str, int]) -> dict[int, str]:
    """ID -> token. If two strings share an ID (a malformed file) the first one wins;
    Hugging Face keeps an arbitrary one."""
    out: dict[int, str] = {}
    for token, token_id in vocab.items():
        out.setdefault(token_id, token)
    return out


def _missing_unk(unk: str | None, model: str) -> PlaygroundError:
    return PlaygroundError(
        f"this {model} tokenizer needs its unknown token {unk!r} for this text, but the "
        "vocab does not have it (Hugging Face fails the same way); add it to model.vocab"
    )


# ----------------------------------------------------------------------------------------
# BPE
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BPEStep:
    """One merge BPE made in a word: ``left`` + ``right`` -> ``merged`` (merge ``rank``)
    at part ``position``; ``before``/``after``: the word's parts around the merge."""

    rank: int
    left: str
    right: str
    merged: str
    position: int
    before: tuple[str, ...]
    after: tuple[str, ...]


class BPEModel:
    """Hugging Face's ``BPE`` model (see the module docstring for the algorithm).

    ``vocab``: token -> ID; ``merges``: ``(left, right)`` pairs in rank order. The merged
    token of a pair is ``left + right`` without ``right``'s ``continuing_subword_prefix``
    (``("un", "##able") -> "unable"``); it must be in the vocab, as must both parts. A pair
    listed twice keeps its *last* rank, as in Hugging Face (whose map is built in order).

    >>> m = BPEModel({"<0x41>": 0, "<0xC3>": 1, "<0xA9>": 2, "a": 3}, [], byte_fallback=True)
    >>> m.tokenize("aé")              # no "é": its two UTF-8 bytes, each spanning the char
    [(3, 0, 1), (1, 1, 2), (2, 1, 2)]
    """

    def __init__(
        self,
        vocab: Mapping[str, int],
        merges: Sequence[tuple[str, str]],
        *,
        unk_token: str | None = None,
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        fuse_unk: bool = False,
        byte_fallback: bool = False,
        ignore_merges: bool = False,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self.vocab: dict[str, int] = dict(vocab)
        self.merges: list[tuple[str, str]] = [(a, b) for a, b in merges]
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix or None
        self.end_of_word_suffix = end_of_word_suffix or None
        self.fuse_unk = bool(fuse_unk)
        self.byte_fallback = bool(byte_fallback)
        self.ignore_merges = bool(ignore_merges)
        self._id_to_token = _reverse(self.vocab)
        self._ranks, self._merged = _merge_table(
            self.vocab, self.merges, self.continuing_subword_prefix or ""
        )
        # "<0xNN>" IDs; all 256 or none, since a character falls back only when every
        # one of its bytes has a token (tested per character, as Hugging Face does)
        ids = [self.vocab.get(f"<0x{b:02X}>") for b in range(256)]
        self._byte_ids: list[int | None] = ids
        self._cache = _WordCache(self._tokenize_word, max(0, int(cache_size)))
        self._bigrams: frozenset[str] | None = None  # built on the first long word
        self._single: frozenset[str] = frozenset()

    @property
    def kind(self) -> str:
        """A short name for display: ``"BPE"`` or ``"BPE (byte fallback)"``."""
        return "BPE (byte fallback)" if self.byte_fallback else "BPE"

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of an ID, or ``None``."""
        return self._id_to_token.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        """The ID of a token string, or ``None``."""
        return self.vocab.get(token)

    def clear_cache(self) -> None:
        """Forget cached words (e.g. to time a cold encode)."""
        self._cache.clear()

    # -- encoding -------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[Token]:
        """``(id, start, end)`` of each token of one word, in characters of ``text``.

        >>> m = BPEModel({"h": 0, "##i": 1, "##i</w>": 2}, [], continuing_subword_prefix="##",
        ...              end_of_word_suffix="</w>")
        >>> m.tokenize("hii")
        [(0, 0, 1), (1, 1, 2), (2, 2, 3)]
        """
        if not text:
            return []
        if self.ignore_merges:
            # subtle: the bare word, without prefix or suffix, as Hugging Face looks it up
            whole = self.vocab.get(text)
            if whole is not None:
                return [(whole, 0, len(text))]
        if len(text) > _MAX_CACHED_WORD and self._cuttable:
            return self._tokenize_long(text)
        return list(self._cache[text])

    # -- long words (whole lines, when there is no pre-tokenizer) --
    #
    # A cut between characters p-1 and p changes nothing when (1) both are tokens on
    # their own (no byte fallback, no unknown run across the cut) and (2) no vocab token
    # contains the two characters side by side: every part is a string of the word's
    # characters (no prefix or suffix), so a part spanning the cut would contain them.
    # With no pair across the cut, each side's merges happen in the same order as in the
    # whole word (lowest rank, then leftmost, restricted to that side). So each piece
    # can go through the cache: for Llama, the text between two "▁"s mostly.

    @property
    def _cuttable(self) -> bool:
        return (
            self.continuing_subword_prefix is None and self.end_of_word_suffix is None
        )

    def _cut_tables(self) -> tuple[frozenset[str], frozenset[str]]:
        if self._bigrams is None:
            self._bigrams = frozenset(
                t[k : k + 2] for t in self.vocab for k in range(len(t) - 1)
            )
            self._single = frozenset(t for t in self.vocab if len(t) == 1)
        return self._bigrams, self._single  # type: ignore[return-value]

    def _tokenize_long(self, text: str) -> list[Token]:
        bigrams, single = self._cut_tables()
        cache = self._cache
        out: list[Token] = []
        start = 0
        for p in range(1, len(text)):
            if (
                text[p - 1 : p + 1] not in bigrams
                and text[p] in single
                and text[p - 1] in single
            ):
                found = cache[text[start:p]]
                out.extend([(i, s + start, e + start) for i, s, e in found])
                start = p
        out.extend([(i, s + start, e + start) for i, s, e in cache[text[start:]]])
        return out

    def _tokenize_word(self, word: str) -> tuple[Token, ...]:
        ids, spans = self._symbols(word)
        # lowest rank first, leftmost on ties: the order of Hugging Face's heap of (rank,
        # position) (its stale entries are skipped, so the pair joined is always a current one)
        ids = merge(ids, self._ranks, self._merged, spans=spans)
        return tuple((i, s, e) for i, (s, e) in zip(ids, spans))

    def _symbols(self, word: str) -> tuple[list[int], list[tuple[int, int]]]:
        """The word's starting parts: one per character (or its ``<0xNN>`` bytes, or an
        unknown token), each with its character span."""
        vocab = self.vocab
        prefix = self.continuing_subword_prefix
        suffix = self.end_of_word_suffix
        last = len(word) - 1
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        unk: list[int] | None = None  # pending unknown token: [id, start, end]
        for i, ch in enumerate(word):
            s = ch
            if prefix and i:
                s = prefix + s
            if suffix and i == last:
                s = s + suffix
            token_id = vocab.get(s)
            if token_id is not None:
                if unk is not None:
                    ids.append(unk[0])
                    spans.append((unk[1], unk[2]))
                    unk = None
                ids.append(token_id)
                spans.append((i, i + 1))
                continue
            if self.byte_fallback:
                # subtle: the bytes of the *decorated* string (prefix/suffix included),
                # and a pending unknown token stays pending (it lands after these bytes)
                byte_ids = [self._byte_ids[b] for b in s.encode("utf-8")]
                if None not in byte_ids:
                    ids.extend(byte_ids)  # type: ignore[arg-type]
                    spans.extend([(i, i + 1)] * len(byte_ids))
                    continue
            if self.unk_token is None:
                continue  # no unknown token: Hugging Face drops the character
            if unk is not None and self.fuse_unk:
                unk[2] = i + 1
                continue
            unk_id = vocab.get(self.unk_token)
            if unk_id is None:
                raise _missing_unk(self.unk_token, "BPE")
            if unk is not None:
                ids.append(unk[0])
                spans.append((unk[1], unk[2]))
            unk = [unk_id, i, i + 1]
        if unk is not None:
            ids.append(unk[0])
            spans.append((unk[1], unk[2]))
        return ids, spans

    # -- explaining -----------------------------------------------------------------------

    def trace(self, text: str) -> list[BPEStep]:
        """The merges BPE makes in one word, in order, one step per merge (for the UI's
        "why this split" view). With ``ignore_merges`` a word that is itself a token needs
        no merge: ``[]``.

        >>> m = BPEModel({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
        >>> [(s.merged, s.position, s.after) for s in m.trace("abab")]
        [('ab', 0, ('ab', 'a', 'b')), ('ab', 1, ('ab', 'ab'))]
        """
        if not text or (self.ignore_merges and text in self.vocab):
            return []
        ids, _ = self._symbols(text)
        name = self._id_to_token.get
        steps: list[BPEStep] = []
        for i, rank, ids_before, ids_after in merge_steps(ids, self._ranks, self._merged):
            before = tuple(name(t, "") for t in ids_before)
            steps.append(
                BPEStep(
                    rank=rank,
                    left=before[i],
                    right=before[i + 1],
                    merged=name(ids_after[i], ""),
                    position=i,
                    before=before,
                    after=tuple(name(t, "") for t in ids_after),
                )
            )
        return steps


def _merge_table(
    vocab: Mapping[str, int], merges: Sequence[tuple[str, str]], prefix: str
) -> tuple[dict[tuple[int, int], int], dict[int, int]]:
    """``(left ID, right ID) -> rank`` and ``rank -> merged ID``; a bad merge is a
    :class:`FormatError` naming it (Hugging Face refuses such files too)."""
    ranks: dict[tuple[int, int], int] = {}
    merged: dict[int, int] = {}
    cut = len(prefix.encode("utf-8"))
    for rank, (a, b) in enumerate(merges):
        for part in (a, b):
            if part not in vocab:
                raise FormatError(
                    f"model.merges[{rank}] ({a!r}, {b!r}) uses {part!r}, which is not in "
                    "model.vocab; every merge's parts must be tokens"
                )
        # subtle: Hugging Face drops the prefix's *byte length* from the right part
        # whether or not it starts with the prefix
        tail = b.encode("utf-8")
        if len(tail) < cut:
            raise FormatError(
                f"model.merges[{rank}] ({a!r}, {b!r}): the right part is "
                f"shorter than continuing_subword_prefix {prefix!r}"
            )
        try:
            new = a + tail[cut:].decode("utf-8")
        except UnicodeDecodeError:
            new = None
        new_id = vocab.get(new) if new is not None else None
        if new_id is None:
            raise FormatError(
                f"model.merges[{rank}] ({a!r}, {b!r}) makes {new!r}, which "
                "is not in model.vocab; every merge's result must be a token"
            )
        # a pair listed twice keeps its last rank, as Hugging Face's map does
        ranks[(vocab[a], vocab[b])] = rank
        merged[rank] = new_id
    return ranks, merged


# ----------------------------------------------------------------------------------------
# WordPiece and WordLevel
# ----------------------------------------------------------------------------------------


class WordPieceModel:
    """Hugging Face's ``WordPiece`` model (BERT): from the start of the word, the longest
    vocab entry that matches (``continuing_subword_prefix`` before every piece but the
    first), then again from where it ended. A word with a piece that matches nothing, or
    of more than ``max_input_chars_per_word`` characters, is ``unk_token`` as a whole.

    >>> m = WordPieceModel({"[UNK]": 0, "a": 1, "##b": 2}, max_input_chars_per_word=3)
    >>> m.tokenize("ab"), m.tokenize("abbb"), m.tokenize("ba")
    ([(1, 0, 1), (2, 1, 2)], [(0, 0, 4)], [(0, 0, 2)])
    """

    kind = "WordPiece"

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self.vocab: dict[str, int] = dict(vocab)
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        self._id_to_token = _reverse(self.vocab)
        # no piece is longer than the longest token: start each search there, not at
        # the end of a long word
        self._longest = max(map(len, self.vocab), default=0)
        self._cache = _WordCache(self._tokenize_word, max(0, int(cache_size)))

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of an ID, or ``None``."""
        return self._id_to_token.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        """The ID of a token string, or ``None``."""
        return self.vocab.get(token)

    def clear_cache(self) -> None:
        """Forget cached words."""
        self._cache.clear()

    def tokenize(self, text: str) -> list[Token]:
        """``(id, start, end)`` of each piece of one word, in characters of ``text``."""
        if not text:
            return []
        return list(self._cache[text])

    def _unk(self, n: int) -> tuple[Token, ...]:
        unk_id = self.vocab.get(self.unk_token)
        if unk_id is None:
            raise _missing_unk(self.unk_token, "WordPiece")
        return ((unk_id, 0, n),)

    def _tokenize_word(self, word: str) -> tuple[Token, ...]:
        n = len(word)
        if n > self.max_input_chars_per_word:
            return self._unk(n)
        vocab = self.vocab
        prefix = self.continuing_subword_prefix
        out: list[Token] = []
        start = 0
        while start < n:
            end = min(n, start + self._longest)
            while end > start:
                piece = word[start:end]
                token_id = vocab.get(prefix + piece if start else piece)
                if token_id is not None:
                    out.append((token_id, start, end))
                    break
                end -= 1
            else:
                return self._unk(n)
            start = end
        return tuple(out)


class WordLevelModel:
    """Hugging Face's ``WordLevel`` model: each word is one token, or ``unk_token``.

    >>> m = WordLevelModel({"<unk>": 0, "hi": 1})
    >>> m.tokenize("hi"), m.tokenize("yo")
    ([(1, 0, 2)], [(0, 0, 2)])
    """

    kind = "WordLevel"

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "<unk>") -> None:
        self.vocab: dict[str, int] = dict(vocab)
        self.unk_token = unk_token
        self._id_to_token = _reverse(self.vocab)

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of an ID, or ``None``."""
        return self._id_to_token.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        """The ID of a token string, or ``None``."""
        return self.vocab.get(token)

    def tokenize(self, text: str) -> list[Token]:
        """``[(id, 0, len(text))]``: the word's token, or the unknown token."""
        if not text:
            return []
        token_id = self.vocab.get(text)
        if token_id is None:
            token_id = self.vocab.get(self.unk_token)
            if token_id is None:
                raise _missing_unk(self.unk_token, "WordLevel")
        return [(token_id, 0, len(text))]


# ----------------------------------------------------------------------------------------
# Reading the "model" section of tokenizer.json
# ----------------------------------------------------------------------------------------

_SUPPORTED = "BPE and WordPiece (and WordLevel) are"


def _vocab(obj: dict[str, Any], name: str) -> dict[str, int]:
    vocab = obj.get("vocab")
    if isinstance(vocab, list):
        raise FormatError(
            f"{name}: model.vocab is a list of [token, score] pairs (a Unigram model); "
            f"Unigram is not supported yet; {_SUPPORTED}"
        )
    if not isinstance(vocab, dict):
        raise FormatError(f"{name}: model.vocab must be an object of token -> ID")
    for token, token_id in vocab.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise FormatError(
                f"{name}: model.vocab[{token!r}] is {token_id!r}, not a token ID (an "
                "integer >= 0)"
            )
    return vocab


def _merges(obj: dict[str, Any], name: str) -> list[tuple[str, str]]:
    raw = obj.get("merges")
    if not isinstance(raw, list):
        raise FormatError(f"{name}: model.merges must be a list (BPE needs its merges)")
    out: list[tuple[str, str]] = []
    for i, item in enumerate(raw):
        # "left right" (older files; Hugging Face splits on every space, so exactly one
        # must be there) or ["left", "right"]
        parts = item.split(" ") if isinstance(item, str) else item
        if (
            not isinstance(parts, list)
            or len(parts) != 2
            or not all(isinstance(p, str) for p in parts)
        ):
            raise FormatError(
                f'{name}: model.merges[{i}] is {item!r}; expected "left right" or '
                '["left", "right"]'
            )
        out.append((parts[0], parts[1]))
    return out


def _opt_str(
    obj: dict[str, Any], key: str, name: str, default: str | None
) -> str | None:
    value = obj.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise FormatError(
            f"{name}: model.{key} is {value!r}; expected a string or null"
        )
    return value


def _bpe_from_json(obj: dict[str, Any], name: str) -> BPEModel:
    dropout = obj.get("dropout")
    if dropout not in (None, 0, 0.0):
        raise FormatError(
            f"{name}: model.dropout is {dropout!r}; BPE dropout picks merges at random, so "
            "no two encodes agree. The playground needs dropout null or 0"
        )
    vocab, merges = _vocab(obj, name), _merges(obj, name)
    options = {
        "unk_token": _opt_str(obj, "unk_token", name, None),
        "continuing_subword_prefix": _opt_str(
            obj, "continuing_subword_prefix", name, None
        ),
        "end_of_word_suffix": _opt_str(obj, "end_of_word_suffix", name, None),
    }
    try:
        return BPEModel(
            vocab,
            merges,
            **options,
            fuse_unk=bool(obj.get("fuse_unk") or False),
            byte_fallback=bool(obj.get("byte_fallback") or False),
            ignore_merges=bool(obj.get("ignore_merges") or False),
        )
    except FormatError as err:  # a bad merge: say which file
        raise FormatError(f"{name}: {err}") from None


def _wordpiece_from_json(obj: dict[str, Any], name: str) -> WordPieceModel:
    limit = obj.get("max_input_chars_per_word", 100)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise FormatError(
            f"{name}: model.max_input_chars_per_word is {limit!r}; expected an integer >= 0"
        )
    return WordPieceModel(
        _vocab(obj, name),
        unk_token=_opt_str(obj, "unk_token", name, "[UNK]") or "[UNK]",
        continuing_subword_prefix=_opt_str(obj, "continuing_subword_prefix", name, "##")
        or "",
        max_input_chars_per_word=limit,
    )


def _wordlevel_from_json(obj: dict[str, Any], name: str) -> WordLevelModel:
    unk = _opt_str(obj, "unk_token", name, "<unk>") or "<unk>"
    return WordLevelModel(_vocab(obj, name), unk_token=unk)


_READERS: dict[str, Callable[[dict[str, Any], str], Model]] = {
    "BPE": _bpe_from_json,
    "WordPiece": _wordpiece_from_json,
    "WordLevel": _wordlevel_from_json,
}


def _guess_type(obj: dict[str, Any]) -> str:
    """The model type of an old file without ``"type"``, as Hugging Face guesses it (it
    tries BPE, then WordPiece, then WordLevel, then Unigram)."""
    if isinstance(obj.get("vocab"), list):
        return "Unigram"
    if "merges" in obj:
        return "BPE"
    if "continuing_subword_prefix" in obj or "max_input_chars_per_word" in obj:
        return "WordPiece"
    return "WordLevel"


def model_from_json(obj: object, *, name: str = "tokenizer.json") -> Model:
    """The model of a ``tokenizer.json``'s ``"model"`` section.

    >>> m = model_from_json({"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"})
    >>> type(m).__name__
    'WordLevelModel'
    >>> model_from_json({"type": "Unigram", "vocab": [["a", 0.0]]})
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tokenizer.json: model type 'Unigram' is not supported yet; \
BPE and WordPiece (and WordLevel) are
    """
    if not isinstance(obj, dict):
        raise FormatError(
            f'{name}: the "model" section is {type(obj).__name__}, not an object; is '
            "this a Hugging Face tokenizer.json?"
        )
    kind = obj.get("type") or _guess_type(obj)
    reader = _READERS.get(kind) if isinstance(kind, str) else None
    if reader is None:
        raise FormatError(
            f"{name}: model type {kind!r} is not supported yet; {_SUPPORTED}"
        )
    return reader(obj, name)
