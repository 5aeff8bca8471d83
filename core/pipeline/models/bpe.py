"""Hugging Face's ``BPE`` model (``tokenizers/src/models/bpe``): BPE over *strings*.

A word starts as its characters (``continuing_subword_prefix`` on all but the first,
``end_of_word_suffix`` on the last); a character missing from the vocab becomes ``<0xNN>``
byte tokens (``byte_fallback``, only if every byte has one) or the unknown token
(``fuse_unk`` joins a run of them); then merges apply lowest rank first, leftmost first on
ties, through the shared loop :func:`core.engine.bpe.merge`.

>>> bpe = BPEModel({"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}, [("a", "b"), ("ab", "c")])
>>> bpe.tokenize("abcab")
[(4, 0, 3), (3, 3, 5)]
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import cast

from core.engine.bpe import merge, merge_steps
from core.engine.vocab_index import IdColumns
from core.errors import FormatError
from core.pipeline.models.base import (
    DEFAULT_CACHE_SIZE,
    MAX_CACHED_WORD,
    BPEStep,
    ModelCapabilities,
    Token,
    VocabLookup,
    WordCache,
    missing_unk,
    reverse_vocab,
)
from core.pipeline.models.native_merges import NATIVE_MERGES, merge_ids

__all__ = ["BPEModel", "BPEStep"]  # (BPEStep's home is core.pipeline.models.base)


class BPEModel(VocabLookup):
    """Hugging Face's ``BPE`` model (see the module docstring for the algorithm).

    ``vocab``: token -> ID; ``merges``: ``(left, right)`` pairs in rank order. The merged
    token of a pair is ``left + right`` without ``right``'s ``continuing_subword_prefix``
    (``("un", "##able") -> "unable"``); it must be in the vocab, as must both parts. A pair
    listed twice keeps its *last* rank, as in Hugging Face (whose map is built in order).

    >>> m = BPEModel({"<0x41>": 0, "<0xC3>": 1, "<0xA9>": 2, "a": 3}, [], byte_fallback=True)
    >>> m.tokenize("aé")              # no "é": its two UTF-8 bytes, each spanning the char
    [(3, 0, 1), (1, 1, 2), (2, 1, 2)]
    """

    capabilities = ModelCapabilities(merges=True)  # a MergeModel: merges, trace

    def __init__(
        self,
        vocab: Mapping[str, int],
        merges: Sequence[tuple[str, str]] | IdColumns,
        *,
        unk_token: str | None = None,
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        fuse_unk: bool = False,
        byte_fallback: bool = False,
        ignore_merges: bool = False,
        cache_size: int = DEFAULT_CACHE_SIZE,
        merge_tables: tuple[dict[tuple[int, int], int], Mapping[int, int] | Sequence[int]]
        | None = None,
    ) -> None:
        """``merge_tables``: the ``(left ID, right ID) -> rank`` and ``rank -> merged ID``
        tables of these merges (the second a dict or a list), when known already (a table
        cache's, a GGUF's merges as IDs): not checked again;
        ``merges`` may then be their IDs (:class:`~core.engine.vocab_index.IdColumns`), spelled
        out on first read of :attr:`merges`."""
        self.vocab: dict[str, int] = dict(vocab)
        if isinstance(merges, IdColumns):
            if merge_tables is None:
                raise ValueError("merges given as IDs need their merge_tables")
            self._merge_columns: IdColumns = merges
        else:
            # (tuple() of a tuple is that tuple: no copy of 100,000s of merges already pairs)
            self.merges = list(map(tuple, merges))  # type: ignore[arg-type]
            if not set(map(len, self.merges)) <= {2}:  # (as unpacking each did)
                raise ValueError("every merge must be a pair of tokens")
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix or None
        self.end_of_word_suffix = end_of_word_suffix or None
        self.fuse_unk = bool(fuse_unk)
        self.byte_fallback = bool(byte_fallback)
        self.ignore_merges = bool(ignore_merges)
        self._id_to_token = reverse_vocab(self.vocab)
        self._ranks, self._merged = merge_tables or _merge_table(
            self.vocab, self.merges, self.continuing_subword_prefix or ""
        )
        # "<0xNN>" IDs; all 256 or none, since a character falls back only when every
        # one of its bytes has a token (tested per character, as Hugging Face does)
        ids = [self.vocab.get(f"<0x{b:02X}>") for b in range(256)]
        self._byte_ids: list[int | None] = ids
        self._all_bytes = self.byte_fallback and None not in ids
        # two bounded caches: word -> tokens (spans, for the pages) and word -> IDs (encode)
        self._cache = WordCache(self._tokenize_word, max(0, int(cache_size)))
        self._ids = WordCache(self._word_ids, max(0, int(cache_size)))
        self._bigrams: frozenset[str] | None = None  # built on the first long word
        self._single: frozenset[str] = frozenset()
        self._pivot = ""
        self._before_pivot: frozenset[str] = frozenset()

    @functools.cached_property
    def merges(self) -> list[tuple[str, str]]:
        """The merges in rank order, as token pairs (spelled out on first read when the
        model was made from their IDs)."""
        lefts, rights = self._merge_columns
        name = self._id_to_token.__getitem__
        return list(zip(map(name, lefts), map(name, rights)))

    def merge_id_columns(self) -> IdColumns:
        """The merges' left and right token IDs, in rank order.

        >>> BPEModel({"a": 0, "b": 1, "ab": 2}, [("a", "b")]).merge_id_columns()
        IdColumns(lefts=[0], rights=[1])
        """
        columns = self.__dict__.get("_merge_columns")
        if columns is not None:
            return columns
        get = self.vocab.__getitem__
        pairs = self.merges
        return IdColumns(
            list(map(get, map(operator.itemgetter(0), pairs))),
            list(map(get, map(operator.itemgetter(1), pairs))),
        )

    def _fingerprint_attributes(self) -> dict[str, object]:
        """What :mod:`core.engine.fingerprint` hashes: the attributes, :attr:`merges` among them
        even before it is spelled out (so a model from IDs hashes as one from the file)."""
        return {**vars(self), "merges": self.merges}

    @property
    def kind(self) -> str:
        """A short name for display: ``"BPE"`` or ``"BPE (byte fallback)"``."""
        return "BPE (byte fallback)" if self.byte_fallback else "BPE"

    def clear_cache(self) -> None:
        """Forget cached words (e.g. to time a cold encode)."""
        self._cache.clear()
        self._ids.clear()

    def __getstate__(self) -> dict[str, object]:
        """Pickled (to a worker process) without the C twin's table: the copy makes its own."""
        state = self.__dict__.copy()
        state.pop(NATIVE_MERGES, None)
        return state

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
        if len(text) > MAX_CACHED_WORD and self._cuttable:
            return self._tokenize_long(text)
        return list(self._cache[text])

    def encode_word(self, word: str) -> list[int]:
        """The IDs of one word's tokens: ``[t[0] for t in self.tokenize(word)]``, without
        working out spans (and from a cache of its own).

        >>> BPEModel({"a": 0, "b": 1, "ab": 2}, [("a", "b")]).encode_word("abba")
        [2, 1, 0]
        """
        if not word:
            return []
        if self.ignore_merges:
            whole = self.vocab.get(word)
            if whole is not None:
                return [whole]
        if len(word) > MAX_CACHED_WORD and self._cuttable:
            return self._encode_long(word)
        return list(self._ids[word])

    def _word_ids(self, word: str) -> tuple[int, ...]:
        ids: list[int] | None = None
        if self.continuing_subword_prefix is None and self.end_of_word_suffix is None:
            # every character a token (most words): the parts without a Python loop
            found = list(map(self.vocab.get, word))
            if None not in found:
                ids = cast("list[int]", found)
            elif self._all_bytes:
                # with all 256 byte tokens a missing character is always its bytes (no
                # unknown token can be pending): _symbols' answer, without its bookkeeping
                ids = self._with_bytes(word, found)
        if ids is None:
            ids = self._symbols(word)[0]
        # no spans: merge's hot path (the same joins, in the same order; in C where built)
        return tuple(merge_ids(self, ids))

    def _with_bytes(self, word: str, ids: list[int | None]) -> list[int]:
        byte_ids = self._byte_ids
        out: list[int] = []
        for ch, token_id in zip(word, ids):
            if token_id is None:
                out += [byte_ids[b] for b in ch.encode("utf-8")]  # type: ignore[misc]
            else:
                out.append(token_id)
        return out

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
            # the pivot: "▁" (else " "), where SentencePiece-style words start
            self._pivot = next((c for c in ("▁", " ") if c in self._single), "")
            pivot = self._pivot
            self._before_pivot = frozenset(
                c for c in self._single if pivot and c + pivot not in self._bigrams
            )
        return self._bigrams, self._single

    def _cut(self, text: str) -> list[str]:
        """``text`` cut at every position where a cut changes nothing, in order.

        >>> BPEModel({"a": 0, "b": 1, "ab": 2}, [("a", "b")])._cut("abba")
        ['ab', 'b', 'a']
        """
        bigrams, single = self._cut_tables()
        # the cut test for every position at once, all in C (maps, no per-character
        # slicing): a cut before p when text[p - 1] and text[p] are tokens on their own and
        # text[p - 1:p + 1] is inside no token
        ok = list(map(single.__contains__, text))
        apart = map(operator.not_, map(bigrams.__contains__, map(str.__add__, text, text[1:])))
        flags = map(operator.and_, map(operator.and_, ok, ok[1:]), apart)
        cuts = list(itertools.compress(range(1, len(text)), flags))
        return list(map(text.__getitem__, map(slice, [0, *cuts], [*cuts, len(text)])))

    def _pivot_pieces(self, text: str) -> list[str]:
        """``text`` cut before each pivot (``"▁"``) where a cut changes nothing: far fewer
        cuts than :meth:`_cut` finds, but found with ``str.split`` and one test per word.

        >>> BPEModel({"a": 0, "b": 1, "▁": 2, "a▁": 3}, [("a", "▁")])._pivot_pieces("▁a▁b▁▁")
        ['▁a▁b', '▁', '▁']
        """
        self._cut_tables()
        pivot, allowed = self._pivot, self._before_pivot
        if not pivot:
            return [text]
        first, *rest = text.split(pivot)
        pieces: list[str] = []
        current = first
        for part in rest:
            # (current is empty only at the start of the text: no cut there)
            if current and current[-1] in allowed:
                pieces.append(current)
                current = pivot + part
            else:
                current += pivot + part
        pieces.append(current)
        return pieces

    def _encode_long(self, text: str) -> list[int]:
        """:meth:`encode_word` of a long word: its pieces before each pivot, from the cache;
        a long piece not seen yet is cut at every allowed position (:meth:`_cut`), its parts
        go through the cache, and the piece is kept too (a short one is merged whole:
        cheaper than cutting it)."""
        cache = self._ids
        get = cache.get
        out: list[int] = []
        for piece in self._pivot_pieces(text):
            ids = get(piece)
            if ids is None:
                if len(piece) <= _MERGE_WHOLE:
                    ids = cache[piece]
                else:
                    parts = self._cut(piece)
                    ids = tuple(itertools.chain.from_iterable(map(cache.__getitem__, parts)))
                    if len(parts) > 1:
                        cache.keep(piece, ids)
            out += ids
        return out

    def _tokenize_long(self, text: str) -> list[Token]:
        cache = self._cache
        out: list[Token] = []
        start = 0
        for part in self._cut(text):
            found = cache[part]
            out.extend([(i, s + start, e + start) for i, s, e in found] if start else found)
            start += len(part)
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
                raise missing_unk(self.unk_token, "BPE")
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


#: A piece of a long word at most this long is merged whole, not cut again first.
_MERGE_WHOLE = 64


def _merge_table(
    vocab: Mapping[str, int], merges: Sequence[tuple[str, str]], prefix: str
) -> tuple[dict[tuple[int, int], int], dict[int, int]]:
    """``(left ID, right ID) -> rank`` and ``rank -> merged ID``; a bad merge is a
    :class:`FormatError` naming it (Hugging Face refuses such files too)."""
    if not prefix:
        fast = _plain_merge_table(vocab, merges)
        if fast is not None:
            return fast
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


def _plain_merge_table(
    vocab: Mapping[str, int], merges: Sequence[tuple[str, str]]
) -> tuple[dict[tuple[int, int], int], dict[int, int]] | None:
    """:func:`_merge_table` with no prefix (the merged token is ``left + right``), a whole
    list at a time; ``None`` when a token is missing (the careful loop then names it).

    >>> _plain_merge_table({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
    ({(0, 1): 0}, {0: 2})
    """
    flat = list(itertools.chain.from_iterable(merges))  # (zip(*merges) is slow on 280k)
    lefts, rights = flat[::2], flat[1::2]
    try:
        pairs = zip(map(vocab.__getitem__, lefts), map(vocab.__getitem__, rights))
        # a pair listed twice keeps its last rank, as Hugging Face's map does
        ranks = dict(zip(pairs, range(len(merges))))
        made = list(map(vocab.__getitem__, map(str.__add__, lefts, rights)))
    except (KeyError, TypeError):
        return None
    return ranks, dict(enumerate(made))
