"""SentencePiece's BPE model (``bpe_model.cc``) over a normalized text.

User-defined pieces are cut out first, then the adjacent pair whose concatenation is the
best-scored piece is merged (leftmost on ties) until none is a piece; characters left
unknown become ``<0xNN>`` byte pieces (``byte_fallback``) or one ``<unk>`` per run. The
merge loop is :func:`core.engine.bpe.merge`; the text is cut first into words no token can cross,
each cached (the proof is in :class:`SentencePieceBPE`).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from itertools import compress
from typing import Any

from core.engine.bpe import merge, merge_steps
from core.pipeline.models.base import BPEStep, ModelCapabilities
from core.pipeline.sentencepiece.cuts import (  # (re-exported: their home was here)
    WordCuts,
    cut_regex,
    piece_chars,
    space_neighbours,
)
from core.pipeline.sentencepiece.native_words import (
    CACHE_MAX,
    CACHE_WORD,
    LONG_WORD,
    NATIVE_WORDS,
    clear_cache as _clear_native_cache,
    columns_words,
    encode_text,
    encode_words,
)
from core.pipeline.sentencepiece.normalizer import PrefixMatcher
from core.pipeline.sentencepiece.packed import char_cuts
from core.pipeline.sentencepiece.proto import (
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    ModelProto,
    ProtoPiece,
    byte_piece,
    piece_columns,
)
from core.pipeline.sentencepiece.tables import (
    RESERVED as _RESERVED,
    PieceTables,
    first_of_type,
    ids_of_type,
    may_be_formed,
    piece_tables,
    type_codes,
)
from core.pipeline.sentencepiece.vocab_view import VocabView

__all__ = [
    "SentencePieceBPE",
    "VocabView",
    "WordCuts",
    "cut_regex",
    "piece_chars",
    "space_neighbours",
]


# Words longer than this are cut further at character pairs that no piece contains.
_LONG = LONG_WORD
# The word caches' bounds, shared with the C loop (native_words): entries before a clear,
# and the longest word kept (longer ones would hold memory for one use).
_CACHE_MAX, _CACHE_WORD = CACHE_MAX, CACHE_WORD


class UserPiece(str):
    """A user-defined piece in a text: cut out whole first, never joined further."""

    __slots__ = ()


class _MinusScore:
    """``piece -> minus its score``, for :func:`core.engine.bpe.merge` when some score is NaN (it
    has no place among the others). subtle: computed afresh at each look-up, as this port
    always did: a NaN is unequal to itself, but tuple comparison takes an object as equal to
    itself, so one shared NaN object would order merge's heap differently."""

    __slots__ = ("_scores",)

    def __init__(self, scores: dict[str, float]) -> None:
        self._scores = scores

    def get(self, piece: str | None, default: int) -> float | int:
        score = self._scores.get(piece)  # type: ignore[arg-type]
        return default if score is None else -score


class SentencePieceBPE:
    """SentencePiece's BPE model (``bpe_model.cc``) over a normalized text.

    ``tokenize(text)`` gives ``(id, start, end)`` per token, offsets in characters of
    ``text``. Merges: among adjacent symbols whose concatenation is a NORMAL, USER_DEFINED
    or UNUSED piece, the one with the highest score (then the leftmost) is merged, until
    none is left. User-defined pieces are cut out first (longest match) and never merged
    further. An UNUSED result is split back into the two symbols it was made of. A symbol
    that is no piece is unknown: with ``byte_fallback`` its UTF-8 bytes as ``<0xNN>`` pieces,
    else ``<unk>`` (a run of unknown symbols gives one ``<unk>``).

    >>> m = SentencePieceBPE([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1),
    ...                       ProtoPiece("b", -2), ProtoPiece("ab", -3)])
    >>> m.tokenize("abba?")
    [(3, 0, 2), (2, 2, 3), (1, 3, 4), (0, 4, 5)]
    """

    capabilities = ModelCapabilities(merges=True)  # a MergeModel: trace
    #: no merge list: the pieces' scores order the merges (:meth:`trace` shows them)
    merges: Sequence[tuple[str, str]] = ()
    continuing_subword_prefix: str | None = None

    def __init__(
        self,
        pieces: ModelProto | Sequence[ProtoPiece],
        *,
        byte_fallback: bool = False,
        tables: PieceTables | None = None,
        user_defined: list[str] | None = None,
        words_table: Any = None,
        codes: bytes | None = None,
    ) -> None:
        """``tables``, ``user_defined``, ``words_table`` and ``codes``, when given, are what
        :func:`piece_tables`, the USER_DEFINED texts of ``pieces``,
        :func:`~core.pipeline.sentencepiece.native_words.columns_words` and
        :func:`type_codes` are (the loader has them already)."""
        proto = pieces if isinstance(pieces, ModelProto) else None
        if proto is not None and proto.packed is not None and words_table is not None:
            # (a parsed file whose pieces are still packed, and the C table made from them:
            # the columns are unpacked from the file on first read, by the pages that show
            # pieces or decode; encoding reads the table alone)
            self._source = proto
            types: Sequence[int] = proto.packed.types
            texts_of = proto.packed.texts_of
        else:
            self._tokens, self.scores, self.types = piece_columns(pieces)
            types, tokens = self.types, self._tokens
            texts_of = lambda ids: list(map(tokens.__getitem__, ids))  # noqa: E731
        self._size = len(types)
        self.byte_fallback = byte_fallback
        if codes is None:
            codes = type_codes(types)
        self.unk_id = first_of_type(types, UNKNOWN, codes)
        #: the USER_DEFINED pieces, by ID (the normalizer needs them too)
        if user_defined is None:
            user_defined = texts_of(ids_of_type(types, USER_DEFINED, codes))
        self.user_defined = user_defined
        self._user_first = frozenset(s[0] for s in self.user_defined)
        # subtle: where the C twin is built, encoding reads its table alone (made here from
        # the columns), and the dicts below (32,000 keys each) are made on first use: the
        # pages that read them (trace, vocab) are not the ones opened every minute
        if tables is None and words_table is None:
            try:
                words_table = columns_words(
                    self._tokens, self.scores, self.types, unk=self.unk_id,
                    byte_fallback=byte_fallback, user_defined=user_defined,
                )  # fmt: skip
            except ValueError:  # (a text spelled twice: the dicts say which ID wins)
                words_table = None
        if words_table is None:
            # pieces_ of model_interface.cc (may be merged into) and reserved_id_map_
            # (CONTROL, UNKNOWN, BYTE), and the merge ranks: piece_tables
            self._tables = tables or piece_tables(self._tokens, self.scores, self.types)
            # A NaN score has no place among the others (SentencePiece's comparisons do not
            # order it either): then the rank is minus the score, on merge's heap path
            self._heap_only = self._tables[2] is None
        else:
            self._heap_only = False  # (spm_words ranks every piece: no NaN score)
            setattr(self, NATIVE_WORDS, words_table)
        #: token -> ID as SentencePiece's PieceToId answers (reserved pieces first, should
        #: a file spell two pieces alike; a checked file does not); read on first use
        self.vocab: Mapping[str, int] = VocabView(self)
        # an UNUSED piece that merges may form ties each word to the whole text (see
        # tokenize); one that none can form (Phi-3's [PAD…] pieces) changes nothing
        unused = ids_of_type(types, UNUSED, codes)

        def mergeable(piece: str) -> bool:  # (NORMAL, USER_DEFINED or UNUSED: pieces_)
            found = self._find(piece)
            return found is not None and types[found] not in _RESERVED

        self._has_unused = bool(unused) and bool(may_be_formed(texts_of(unused), mergeable))
        self._matcher = PrefixMatcher(self.user_defined)
        self._cache: dict[str, tuple[tuple[int, int, int], ...]] = {}
        self._ids_cache: dict[str, tuple[int, ...]] = {}  # encode_word's: word -> its IDs

    # -- the columns, unpacked on first use from a file whose pieces are still packed --

    @functools.cached_property
    def _tokens(self) -> list[str]:
        return self._source.piece_texts

    @functools.cached_property
    def scores(self) -> list[float]:
        """Each piece's score, by ID."""
        return self._source.piece_scores

    @functools.cached_property
    def types(self) -> list[int]:
        """Each piece's type, by ID."""
        return self._source.piece_types

    def _fingerprint_attributes(self) -> dict[str, Any]:
        """What :mod:`core.engine.fingerprint` hashes: the attributes, the columns among them even
        while packed (so a packed model hashes as the same model read eagerly)."""
        return {**vars(self), "scores": self.scores, "types": self.types}

    # -- the tables, made on first use where the C twin encodes without them --

    @functools.cached_property
    def _tables(self) -> PieceTables:
        return piece_tables(self._tokens, self.scores, self.types)

    @property
    def _vocab(self) -> dict[str, int]:
        """``text -> ID`` (:attr:`vocab` is its read-only view)."""
        return self._tables[0]

    @property
    def _normal(self) -> Mapping[str, int]:
        """``text -> ID`` for the pieces that may be merged into."""
        return self._tables[1]

    @functools.cached_property
    def _merge_rank(self) -> dict[str, int] | _MinusScore:
        ranks = self._tables[2]
        if ranks is not None:
            return ranks
        normal = self._normal
        return _MinusScore(dict(zip(normal, map(self.scores.__getitem__, normal.values()))))

    @functools.cached_property
    def _unused(self) -> frozenset[str]:
        """The UNUSED pieces (split back after the merges)."""
        if not self._has_unused:
            return frozenset()
        normal = self._normal
        normal_types = map(self.types.__getitem__, normal.values())
        return frozenset(compress(normal, map(UNUSED.__eq__, normal_types)))

    @functools.cached_property
    def _byte_ids(self) -> list[int]:
        return [self._reserved_id(byte_piece(b)) for b in range(256)]

    @functools.cached_property
    def _normal_texts(self) -> list[str]:
        """The texts of the pieces that may be merged into (with repeats, if spelled twice)."""
        merged_into = map(operator.not_, map(_RESERVED.__contains__, self.types))
        return list(compress(self._tokens, merged_into))

    @functools.cached_property
    def _cut(self) -> WordCuts:
        """The cutter of words no piece crosses: ``tokplay_native.spm``'s CharCuts where
        built (from the file's packed pieces while they are packed), the same words with no
        regex to compile on a model's first encode; else :class:`WordCuts`."""
        packed = self.__dict__.get("_source", ModelProto).packed
        cuts = char_cuts(self._normal_texts if packed is None else packed)
        return WordCuts(self._normal_texts) if cuts is None else cuts

    def _reserved_id(self, piece: str) -> int:
        """The ID of ``piece`` if it is a reserved one (a byte piece), else ``<unk>``'s."""
        found = self._vocab.get(piece)
        return found if found is not None and self.types[found] in _RESERVED else self.unk_id

    @property
    def pieces(self) -> list[ProtoPiece]:
        """The model's pieces by ID (built on each call)."""
        return list(map(ProtoPiece, self._tokens, self.scores, self.types))

    @functools.cached_property
    def _bigrams(self) -> frozenset[str]:
        """Every two adjacent characters inside a piece that may be merged into; only
        words longer than _LONG need it, so it is built on first use."""
        return frozenset(s[i : i + 2] for s in self._normal_texts for i in range(len(s) - 1))

    # -- the Model protocol --

    @property
    def kind(self) -> str:
        return "SentencePiece BPE"

    def id_to_token(self, token_id: int) -> str | None:
        return self._tokens[token_id] if 0 <= token_id < self._size else None

    def token_to_id(self, token: str) -> int | None:
        return self._find(token)

    def get_vocab_size(self) -> int:
        return self._size

    def piece_to_id(self, piece: str) -> int:
        """SentencePiece's PieceToId: a reserved piece, else a normal one, else ``<unk>``."""
        found = self._find(piece)
        return self.unk_id if found is None else found

    @property
    def _columns_only(self) -> bool:
        """The dicts are not made, and the C table made from the columns stands for them (so
        no text is spelled twice, and its IDs are vocab's)."""
        return "_tables" not in self.__dict__ and bool(self.__dict__.get(NATIVE_WORDS))

    def _find(self, piece: str) -> int | None:
        """``vocab.get(piece)``, from the C table while the dicts are not made."""
        if self._columns_only:
            found = self.__dict__[NATIVE_WORDS].piece_id(piece) if type(piece) is str else -1
            return None if found < 0 else int(found)
        return self._vocab.get(piece)

    def tokenize(self, text: str) -> list[tuple[int, int, int]]:
        if not text:
            return []
        if self._has_unused:
            # An UNUSED piece is split back with the pair last seen forming it anywhere in
            # the text (bpe_model.cc's rev_merge), so words are not independent: no cuts.
            rev: dict[str, tuple[str, str]] = {}
            out = self._finish(self._bpe(text, rev), rev)
        else:
            out = []
            cache = self._cache
            offset = 0
            for word in self._words(text):
                found = cache.get(word)
                if found is None:
                    found = self._word(word)
                    if len(cache) >= _CACHE_MAX:
                        cache.clear()
                    cache[word] = found
                if offset:
                    out.extend([(i, s + offset, e + offset) for i, s, e in found])
                else:
                    out.extend(found)
                offset += len(word)
        if not self.byte_fallback:
            out = self._merge_unknown(out)
        return out

    def encode_word(self, text: str) -> list[int]:
        """``[t[0] for t in self.tokenize(text)]``, faster: no offsets, each independent
        word's IDs cached (a word :meth:`words` gives is looked up whole, uncut).

        >>> m = SentencePieceBPE([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1),
        ...                       ProtoPiece("b", -2), ProtoPiece("ab", -3)])
        >>> m.encode_word("abba?")
        [3, 2, 1, 0]
        """
        cache = self._ids_cache
        found = cache.get(text)
        if found is not None:
            return list(found)
        if not text:
            return []
        if self._has_unused:  # (words are not independent: see tokenize)
            return [t[0] for t in self.tokenize(text)]
        words = self._words(text)
        ids: list[int] = []
        for word in words:
            found = cache.get(word)
            if found is None:
                # (a tuple: the garbage collector stops tracking a tuple of ints)
                found = tuple(self._word_ids(word))
                if len(word) <= _CACHE_WORD:
                    if len(cache) >= _CACHE_MAX:
                        cache.clear()
                    cache[word] = found
            ids += found
        if not self.byte_fallback and self.unk_id in ids:
            ids = _merge_unknown_ids(ids, self.unk_id)
        return ids

    def encode_words(self, words: list[str], out: list[int]) -> None:
        """``out += encode_word(w)`` for each of ``words`` (a pre-tokenizer's): in C where
        tokplay_native was built (:mod:`core.pipeline.sentencepiece.native_words`).

        >>> m = SentencePieceBPE([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1),
        ...                       ProtoPiece("b", -2), ProtoPiece("ab", -3)])
        >>> out = [7]; m.encode_words(["ab", "", "ba"], out); out
        [7, 3, 2, 1]
        """
        encode_words(self, words, out)

    def encode_text(self, text: str, out: list[int]) -> None:
        """``out += encode_word(w)`` for each of :meth:`words` of ``text``: with the C twin,
        in one pass that makes no str for the words
        (:func:`core.pipeline.sentencepiece.native_words.encode_text`).

        >>> m = SentencePieceBPE([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1),
        ...                       ProtoPiece("b", -2), ProtoPiece("ab", -3)])
        >>> out = [7]; m.encode_text("abba", out); out
        [7, 3, 2, 1]
        """
        encode_text(self, text, out)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (to a worker process) without the C twin's objects: the copy makes its own."""
        state = self.__dict__.copy()
        state.pop(NATIVE_WORDS, None)
        state.pop("_cut", None)
        return state

    def _word_ids(self, word: str) -> list[int]:
        """:meth:`_word`'s IDs alone (``_finish`` without offsets, no UNUSED pieces)."""
        get = self._vocab.get
        unk = self.unk_id
        ids: list[int] = []
        for sym in self._bpe(word):
            token_id = get(sym, unk)
            if token_id == unk and self.byte_fallback:
                byte_ids = self._byte_ids
                ids.extend([byte_ids[b] for b in sym.encode("utf-8")])
            else:
                ids.append(token_id)
        if not self.byte_fallback and unk in ids:
            ids = _merge_unknown_ids(ids, unk)  # (so a cached word is its tokenize's IDs)
        return ids

    # -- cutting the text into independent words --
    #
    # SentencePiece runs BPE over the whole normalized text. Cutting it between positions
    # p-1 and p is exact when no symbol can ever span the cut:
    #
    # 1. Every symbol is a single character, a user-defined piece cut out by the prefix
    #    matcher, or the result of a merge, which is a piece of `pieces_` (NORMAL,
    #    USER_DEFINED, UNUSED). All of these are in `_normal` or single characters.
    # 2. A symbol spanning the cut contains text[p-1:p+1] as a substring; so if that pair
    #    of characters occurs in no piece of `_normal`, no symbol ever spans the cut, and no
    #    pair across it is ever merged (its concatenation would span it).
    # 3. The prefix matcher scans left to right; as no user-defined match spans the cut
    #    (point 2), its scan restarts at p exactly as the global scan reaches p, and a
    #    longest match found in the word is the global one (a longer one would span p).
    # 4. With no pair across cuts, the merges of each word are chosen among that word's
    #    pairs only: the global "best score, then leftmost" order restricted to one word is
    #    that word's own order. So each word's result is the same as in the whole text, and
    #    can be cached. (UNUSED pieces break point 4 through rev_merge: no cutting then.)
    #
    # Fast rule for point 2 (a regex): cut before a ▁ whose left neighbour is not a
    # character that precedes a ▁ inside some piece (Mistral/Llama: only ▁ does, in "▁▁"),
    # and after a ▁ whose right neighbour never follows a ▁ inside a piece. Words longer
    # than _LONG are then cut at every pair of characters that no piece contains.

    def words(self, text: str) -> list[str]:
        """The independent words :meth:`tokenize` cuts ``text`` into (the proof is above);
        ``[text]`` when the model has UNUSED pieces, whose words are not independent.

        These are SentencePiece's pre-tokens in all but name: no token spans two of them.
        """
        if not text:
            return []
        return [text] if self._has_unused else self._words(text)

    def _words(self, text: str) -> list[str]:
        # (the cuts give no empty word; a text of at most _LONG characters has no long one)
        if len(text) <= _LONG:
            return self._cut.split(text)
        words, longest = self._cut.split_longest(text)
        if longest > _LONG:
            out: list[str] = []
            for w in words:
                out.extend(self._split_long(w) if len(w) > _LONG else (w,))
            words = out
        return words

    def _split_long(self, word: str) -> list[str]:
        bigrams = self._bigrams
        out: list[str] = []
        start = 0
        for i in range(1, len(word)):
            if word[i - 1 : i + 1] not in bigrams:
                out.append(word[start:i])
                start = i
        out.append(word[start:])
        return out

    # -- BPE on one word --

    def _word(self, word: str) -> tuple[tuple[int, int, int], ...]:
        return tuple(self._finish(self._bpe(word), {}))

    def _bpe(self, text: str, rev: dict[str, tuple[str, str]] | None = None) -> list[str]:
        """bpe_model.cc's SampleEncode (without dropout) through :func:`core.engine.bpe.merge`:
        user-defined pieces cut out first (longest match), then the adjacent pair forming
        the best-scored piece joins first, leftmost on ties (the order of its heap of
        candidates: best score, then smallest left index, stale entries skipped). ``rev``
        gets its ``rev_merge``: each UNUSED piece -> the pair last pushed forming it."""
        if rev is None and (not self._user_first or self._user_first.isdisjoint(text)):
            parts, key = list(text), operator.add  # the common case: plain characters
        else:
            chunks = self._matcher.split(text)
            parts = [UserPiece(c) if user else c for c, user in chunks]
            key = self._pair_key(rev)
        return merge(parts, self._merge_rank, key=key, heap=self._heap_only)

    def _pair_key(
        self, rev: dict[str, tuple[str, str]] | None
    ) -> Callable[[str, str], str | None]:
        """The key of two adjacent parts in ``_merge_rank``; None (no key) if one of them is
        a user-defined piece. With ``rev``, note each UNUSED piece a pair forms: merge asks
        about pairs in the order bpe_model.cc pushes them (core.engine.bpe.merge's subtle note)."""
        unused = self._unused

        def key(left: str, right: str) -> str | None:
            if type(left) is UserPiece or type(right) is UserPiece:
                return None
            joined = left + right
            if rev is not None and joined in unused:
                rev[joined] = (left, right)
            return joined

        return key

    def _finish(
        self, symbols: list[str], rev: dict[str, tuple[str, str]]
    ) -> list[tuple[int, int, int]]:
        """Symbols -> (id, start, end): UNUSED pieces resegmented, unknown ones to bytes."""
        out: list[tuple[int, int, int]] = []
        pos = 0
        get = self._vocab.get
        unk = self.unk_id
        byte_fallback = self.byte_fallback
        if rev:
            symbols = [s for sym in symbols for s in self._resegment(sym, rev)]
        for sym in symbols:
            token_id = get(sym, unk)
            end = pos + len(sym)
            if token_id == unk and byte_fallback:
                # the bytes of an unknown character (a symbol left unmerged is one
                # character); every byte piece is drawn under that character
                byte_ids = self._byte_ids
                out.extend((byte_ids[b], pos, end) for b in sym.encode("utf-8"))
            else:
                out.append((token_id, pos, end))
            pos = end
        return out

    def _resegment(self, sym: str, rev: dict[str, tuple[str, str]]) -> list[str]:
        token_id = self.piece_to_id(sym)
        if token_id < 0 or self.types[token_id] != UNUSED or sym not in rev:
            return [sym]
        left, right = rev[sym]
        return self._resegment(left, rev) + self._resegment(right, rev)

    def _merge_unknown(
        self, out: list[tuple[int, int, int]]
    ) -> list[tuple[int, int, int]]:
        """A run of ``<unk>`` tokens is one ``<unk>`` (PopulateSentencePieceText)."""
        unk = self.unk_id
        if not any(t[0] == unk for t in out):
            return out
        merged: list[tuple[int, int, int]] = []
        for tok in out:
            if tok[0] == unk and merged and merged[-1][0] == unk:
                merged[-1] = (unk, merged[-1][1], tok[2])
            else:
                merged.append(tok)
        return merged

    def clear_cache(self) -> None:
        """Forget cached words (e.g. to time a cold encode)."""
        self._cache.clear()
        self._ids_cache.clear()
        _clear_native_cache(self)

    # -- explaining --

    def trace(self, text: str) -> list[BPEStep]:
        """The merges BPE makes in ``text`` (a normalized text), in order, for the UI's "why
        this split" view. ``rank`` is the merged piece's ID: SentencePiece has no merge
        list, it merges the best-*scored* piece first (in trained files, the lower ID).
        (An UNUSED piece is shown merged; :meth:`tokenize` splits it back.)

        >>> m = SentencePieceBPE([ProtoPiece("<unk>", 0, UNKNOWN), ProtoPiece("a", -1),
        ...                       ProtoPiece("b", -2), ProtoPiece("ab", -3)])
        >>> [(s.merged, s.position, s.after) for s in m.trace("abab")]
        [('ab', 0, ('ab', 'a', 'b')), ('ab', 1, ('ab', 'ab'))]
        """
        parts = [UserPiece(c) if user else c for c, user in self._matcher.split(text)]
        joins = merge_steps(parts, self._merge_rank, key=self._pair_key(None), heap=self._heap_only)
        steps: list[BPEStep] = []
        for at, _, parts_before, parts_after in joins:
            before = tuple(map(str, parts_before))  # (plain strings: no UserPiece shown)
            merged = parts_after[at]
            steps.append(BPEStep(rank=self._normal[merged], left=before[at],
                                 right=before[at + 1], merged=merged, position=at,
                                 before=before, after=tuple(map(str, parts_after))))  # fmt: skip
        return steps


def _merge_unknown_ids(ids: list[int], unk: int) -> list[int]:
    """A run of ``unk`` is one ``unk`` (:meth:`SentencePieceBPE._merge_unknown` on IDs).

    >>> _merge_unknown_ids([0, 0, 5, 0], 0)
    [0, 5, 0]
    """
    return [i for k, i in enumerate(ids) if i != unk or k == 0 or ids[k - 1] != unk]
