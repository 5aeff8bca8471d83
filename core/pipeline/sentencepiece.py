"""SentencePiece BPE ``.model`` files in pure Python, ID for ID like the ``sentencepiece`` library.

:func:`sentencepiece_tokenizer` reads the protobuf (:mod:`core.pipeline.sentencepiece_proto`,
no ``protobuf`` needed) into the stages of a :class:`~core.pipeline.tokenizer.PipelineTokenizer`:

- :class:`SentencePieceNormalizer`: the file's char map (if any), ``add_dummy_prefix``,
  ``remove_extra_whitespaces``, spaces escaped to ``▁`` (``normalizer.cc``);
- :class:`SentencePieceBPE`: SentencePiece's BPE over the normalized text (``bpe_model.cc``):
  user-defined pieces cut out first, then the adjacent pair whose concatenation is the
  best-scored piece is merged (leftmost on ties) until none is a piece; characters left
  unknown become ``<0xNN>`` byte pieces (``byte_fallback``) or one ``<unk>`` per run;
- :class:`SentencePieceDecoder`: ``▁`` → space, the dummy prefix's space dropped, byte pieces
  reassembled into UTF-8 (each invalid byte → U+FFFD), control pieces → ``""``, ``<unk>`` →
  ``" ⁇ "`` (``SentencePieceProcessor::Decode``).

Control pieces (``<s>``, ``[INST]``) are special tokens: SentencePiece never matches them
in the input text (typing ``[INST]`` gives the pieces of ``[``, ``INST``, ``]``), and
neither do we; ``add_special_tokens=True`` puts ``<s>`` in front (``encode(add_bos=True)``).

Unigram, WORD and CHAR models are refused with a :class:`FormatError` naming the model type.
"""

from __future__ import annotations

import operator
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from core.bpe import merge, merge_steps
from core.errors import FormatError
from core.pipeline.models import BPEStep
from core.pipeline.piece import Piece, Span
from core.pipeline.post_processors import Template
from core.pipeline.sentencepiece_proto import (
    BPE,
    BYTE,
    CHAR,
    CONTROL,
    NORMAL,
    UNIGRAM,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    WORD,
    ModelProto,
    NormalizerSpec,
    ProtoPiece,
    parse_model_proto,
    sniff_model_proto,
)
from core.pipeline.tokenizer import PipelineTokenizer

__all__ = [
    "SentencePieceBPE",
    "SentencePieceDecoder",
    "SentencePieceModel",
    "SentencePieceNormalizer",
    "load_sentencepiece_model",
    "looks_like_sentencepiece",
    "sentencepiece_tokenizer",
]

SPACE = "\u2581"  # ▁ LOWER ONE EIGHTH BLOCK: SentencePiece's visible space
_MODEL_NAMES = {UNIGRAM: "Unigram", BPE: "BPE", WORD: "WORD", CHAR: "CHAR"}


def looks_like_sentencepiece(data: bytes) -> bool:
    """A cheap sniff for format detection: the bytes start like a SentencePiece ``.model``
    (a serialized ModelProto whose first fields are pieces with a string and a score).

    >>> looks_like_sentencepiece(b'{"version": "1.0"}'), looks_like_sentencepiece(b"\\x80\\x04")
    (False, False)
    """
    return sniff_model_proto(data)


def _byte_piece(b: int) -> str:
    return f"<0x{b:02X}>"


_BYTE_PIECES = {_byte_piece(b): b for b in range(256)}


# ─── the normalizer ──────────────────────────────────────────────────────────────────────


class _CharsMap:
    """A compiled normalization rule (``precompiled_charsmap``, e.g. ``nmt_nfkc``): a Darts
    double-array trie over UTF-8 byte strings whose values point into a blob of
    NUL-terminated replacement strings (``normalizer.cc``, ``darts.h``).
    """

    def __init__(self, blob: bytes, what: str) -> None:
        if len(blob) <= 4:
            raise FormatError(
                f"{what}: the normalization rule (precompiled_charsmap) is broken"
            )
        size = int.from_bytes(blob[:4], "little")
        if size >= len(blob) or size % 4:
            raise FormatError(
                f"{what}: the normalization rule's trie size ({size}) is broken"
            )
        # little-endian uint32 units, whatever the machine
        self.units = list(struct.unpack_from(f"<{size // 4}I", blob, 4))
        self.normalized = blob[4 + size :]
        self._cache: dict[int, str] = {}

    def longest(self, data: bytes, pos: int) -> tuple[int, str | None]:
        """The longest rule matching ``data[pos:]``: (bytes matched, replacement), or (0, None)."""
        units = self.units
        n = len(units)
        unit = units[0]
        node = (unit >> 10) << ((unit & (1 << 9)) >> 6)
        best_len, best_value = 0, -1
        for i in range(pos, len(data)):
            byte = data[i]
            node ^= byte
            if node >= n:
                break
            unit = units[node]
            if (unit & ((1 << 31) | 0xFF)) != byte:
                break
            node ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1:
                if node >= n:
                    break
                best_len, best_value = i + 1 - pos, units[node] & ((1 << 31) - 1)
        if best_len == 0:
            return 0, None
        out = self._cache.get(best_value)
        if out is None:
            end = self.normalized.find(b"\0", best_value)
            raw = self.normalized[
                best_value : end if end >= 0 else len(self.normalized)
            ]
            out = raw.decode("utf-8", "replace")
            self._cache[best_value] = out
        return best_len, out


class _PrefixMatcher:
    """Longest-match of user-defined pieces at a position (SentencePiece's PrefixMatcher):
    a left-to-right scan taking the longest piece that starts here, else one character."""

    def __init__(self, symbols: Iterable[str]) -> None:
        ordered = sorted(set(symbols), key=lambda s: (-len(s), s))
        self.symbols = frozenset(ordered)
        self.first = frozenset(s[0] for s in ordered)
        self.regex = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def split(self, text: str) -> list[tuple[str, bool]]:
        """``text`` as (chunk, is_user_defined): user-defined matches and single characters."""
        if self.regex is None:
            return [(ch, False) for ch in text]
        out: list[tuple[str, bool]] = []
        pos = 0
        for m in self.regex.finditer(text):
            out.extend((ch, False) for ch in text[pos : m.start()])
            out.append((m.group(), True))
            pos = m.end()
        out.extend((ch, False) for ch in text[pos:])
        return out


class SentencePieceNormalizer:
    """SentencePiece's normalizer as a pipeline :class:`Normalizer` (keeps :class:`Piece` spans).

    >>> n = SentencePieceNormalizer(remove_extra_whitespaces=False)
    >>> p = n.normalize(Piece.of("Hi  you"))
    >>> p.text, p.spans[:3]
    ('▁Hi▁▁you', [(0, 0), (0, 1), (1, 2)])
    >>> SentencePieceNormalizer().normalize(Piece.of("  Hi   you ")).text
    '▁Hi▁you'
    """

    def __init__(
        self,
        *,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = True,
        escape_whitespaces: bool = True,
        treat_whitespace_as_suffix: bool = False,
        user_defined_symbols: Iterable[str] = (),
        precompiled_charsmap: bytes = b"",
        name: str = "tokenizer.model",
    ) -> None:
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.treat_whitespace_as_suffix = treat_whitespace_as_suffix
        self.matcher = _PrefixMatcher(user_defined_symbols)
        self.charsmap = (
            _CharsMap(precompiled_charsmap, name) if precompiled_charsmap else None
        )

    @classmethod
    def from_spec(
        cls, spec: NormalizerSpec, *, treat_whitespace_as_suffix: bool = False,
        user_defined_symbols: Iterable[str] = (), name: str = "tokenizer.model",
    ) -> SentencePieceNormalizer:  # fmt: skip
        return cls(
            add_dummy_prefix=spec.add_dummy_prefix,
            remove_extra_whitespaces=spec.remove_extra_whitespaces,
            escape_whitespaces=spec.escape_whitespaces,
            treat_whitespace_as_suffix=treat_whitespace_as_suffix,
            user_defined_symbols=user_defined_symbols,
            precompiled_charsmap=spec.precompiled_charsmap,
            name=name,
        )

    def normalize_str(self, text: str) -> str:
        """The normalized text alone (``SentencePieceProcessor.normalize``)."""
        return self.normalize(Piece.of(text)).text

    def normalize(self, piece: Piece) -> Piece:
        if not piece.text:
            return piece
        space = SPACE if self.escape_whitespaces else " "
        if self.charsmap is None and not self.remove_extra_whitespaces:
            # Fast path (Llama 2 / Mistral): one character in, one out. Cutting out
            # user-defined pieces first changes nothing here: their spaces are escaped too.
            out = (
                Piece(piece.text.replace(" ", space), piece.spans)
                if space != " "
                else piece
            )
            if not self.add_dummy_prefix:
                return out
            return (
                out.append(space)
                if self.treat_whitespace_as_suffix
                else out.prepend(space)
            )
        return self._general(piece, space)

    def _chunks(self, piece: Piece) -> list[tuple[str, Span]]:
        """``Normalizer::NormalizePrefix`` applied left to right: (output, original span) per
        chunk: a user-defined piece (kept as is), else the longest char-map rule, else one
        character. A rule may run over the start of a later user-defined piece, as in C++."""
        text, spans = piece.text, piece.spans
        charsmap = self.charsmap
        regex = self.matcher.regex
        first = self.matcher.first
        if charsmap is None and regex is None:
            return list(zip(text, spans))
        out: list[tuple[str, Span]] = []
        data = text.encode("utf-8") if charsmap is not None else b""
        char_at: dict[int, int] = {}  # byte offset -> character index
        b = 0
        for i, ch in enumerate(text):
            char_at[b] = i
            b += len(ch.encode("utf-8")) if charsmap is not None else 1
        char_at[b] = len(text)
        b = 0
        i = 0
        while i < len(text):
            if regex is not None and text[i] in first:
                m = regex.match(text, i)
                if m:
                    j = m.end()
                    out.append((m.group(), piece[i:j].span))
                    b += (
                        len(m.group().encode("utf-8"))
                        if charsmap is not None
                        else j - i
                    )
                    i = j
                    continue
            if charsmap is not None:
                length, replacement = charsmap.longest(data, b)
                if length and (b + length) in char_at:
                    j = char_at[b + length]
                    out.append((replacement or "", piece[i:j].span))
                    b += length
                    i = j
                    continue
                # (a rule ending inside a character would make invalid UTF-8: not applied)
                b += len(text[i].encode("utf-8"))
            else:
                b += 1
            out.append((text[i], spans[i]))
            i += 1
        return out

    def _general(self, piece: Piece, space: str) -> Piece:
        """``Normalizer::Normalize``: heading spaces dropped, the dummy prefix, runs of spaces
        squeezed, trailing spaces (any ``▁``, even typed ones) dropped, or the dummy suffix."""
        chunks = self._chunks(piece)
        k = 0
        if self.remove_extra_whitespaces:  # heading spaces
            while k < len(chunks) and chunks[k][0] == " ":
                k += 1
        if k == len(chunks):  # nothing but spaces: nothing at all, not even the dummy ▁
            return Piece("", [])
        at = chunks[k][1][0]
        text: list[str] = []
        spans: list[Span] = []
        if self.add_dummy_prefix and not self.treat_whitespace_as_suffix:
            text.append(space)
            spans.append((at, at))
        is_prev_space = self.remove_extra_whitespaces
        for out, span in chunks[k:]:
            if is_prev_space:
                out = out.lstrip(" ")
            if out:
                text.append(out.replace(" ", space) if space != " " else out)
                spans.extend([span] * len(out))
                is_prev_space = out.endswith(" ")
            if not self.remove_extra_whitespaces:
                is_prev_space = False
        joined = "".join(text)
        if self.remove_extra_whitespaces:
            # trailing spaces go (and typed ▁ too: SentencePiece strips them the same way)
            joined = joined.rstrip(space)
            del spans[len(joined) :]
        if self.add_dummy_prefix and self.treat_whitespace_as_suffix:
            end = spans[-1][1] if spans else at
            joined += space
            spans.append((end, end))
        return Piece(joined, spans)


# ─── the model ──────────────────────────────────────────────────────────────────────────

# Words longer than this are cut further at character pairs that no piece contains.
_LONG = 64
_CACHE_MAX = 200_000


class _UserPiece(str):
    """A user-defined piece in a text: cut out whole first, never joined further."""

    __slots__ = ()


class _MinusScore:
    """``piece -> minus its score``, for :func:`core.bpe.merge` when some score is NaN (it
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

    def __init__(
        self, pieces: Sequence[ProtoPiece], *, byte_fallback: bool = False
    ) -> None:
        self.pieces = list(pieces)
        self.byte_fallback = byte_fallback
        self._tokens = [p.piece for p in self.pieces]
        self.types = [p.type for p in self.pieces]
        self.scores = [p.score for p in self.pieces]
        normal: dict[str, int] = {}  # pieces_ of model_interface.cc: may be merged into
        reserved: dict[str, int] = {}  # reserved_id_map_: CONTROL, UNKNOWN, BYTE
        self.unk_id = -1
        for i, p in enumerate(self.pieces):
            table = reserved if p.type in (CONTROL, UNKNOWN, BYTE) else normal
            table.setdefault(p.piece, i)
            if p.type == UNKNOWN and self.unk_id < 0:
                self.unk_id = i
        self._normal = normal
        #: token -> ID as SentencePiece's PieceToId answers (reserved pieces first, should
        #: a file spell two pieces alike; a checked file does not)
        self.vocab: dict[str, int] = {**normal, **reserved}
        # core.bpe.merge joins the lowest rank first. A piece's rank is the place of its
        # score among the distinct scores, best first (equal scores, equal ranks; -inf
        # last): small ints, which compare fast with merge's NO_MERGE where floats do not.
        # A NaN score has no place (SentencePiece's comparisons do not order it either):
        # then the rank is minus the score, on merge's heap path, as before (_MinusScore).
        scores = {s: self.scores[i] for s, i in normal.items()}
        self._heap_only = any(sc != sc for sc in scores.values())
        self._merge_rank: dict[str, int] | _MinusScore
        if self._heap_only:
            self._merge_rank = _MinusScore(scores)
        else:
            place = {sc: k for k, sc in enumerate(sorted(set(scores.values()), reverse=True))}
            self._merge_rank = {s: place[sc] for s, sc in scores.items()}
        self._unused = frozenset(s for s, i in normal.items() if self.types[i] == UNUSED)
        self._byte_ids = [reserved.get(_byte_piece(b), self.unk_id) for b in range(256)]
        user = [p.piece for p in self.pieces if p.type == USER_DEFINED]
        self._matcher = _PrefixMatcher(user)
        self._user_first = frozenset(s[0] for s in user)
        self._has_unused = any(t == UNUSED for t in self.types)
        self._cut = _cut_regex(normal)
        self._bigrams = {s[i : i + 2] for s in normal for i in range(len(s) - 1)}
        self._cache: dict[str, tuple[tuple[int, int, int], ...]] = {}

    # -- the Model protocol --

    @property
    def kind(self) -> str:
        return "SentencePiece BPE"

    def id_to_token(self, token_id: int) -> str | None:
        return self._tokens[token_id] if 0 <= token_id < len(self._tokens) else None

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def get_vocab_size(self) -> int:
        return len(self._tokens)

    def piece_to_id(self, piece: str) -> int:
        """SentencePiece's PieceToId: a reserved piece, else a normal one, else ``<unk>``."""
        return self.vocab.get(piece, self.unk_id)

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
        words = self._cut.split(text) if self._cut is not None else [text]
        if any(len(w) > _LONG for w in words):
            out: list[str] = []
            for w in words:
                out.extend(self._split_long(w) if len(w) > _LONG else (w,))
            words = out
        return [w for w in words if w]

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
        """bpe_model.cc's SampleEncode (without dropout) through :func:`core.bpe.merge`:
        user-defined pieces cut out first (longest match), then the adjacent pair forming
        the best-scored piece joins first, leftmost on ties (the order of its heap of
        candidates: best score, then smallest left index, stale entries skipped). ``rev``
        gets its ``rev_merge``: each UNUSED piece -> the pair last pushed forming it."""
        if rev is None and (not self._user_first or self._user_first.isdisjoint(text)):
            parts, key = list(text), operator.add  # the common case: plain characters
        else:
            chunks = self._matcher.split(text)
            parts = [_UserPiece(c) if user else c for c, user in chunks]
            key = self._pair_key(rev)
        return merge(parts, self._merge_rank, key=key, heap=self._heap_only)

    def _pair_key(
        self, rev: dict[str, tuple[str, str]] | None
    ) -> Callable[[str, str], str | None]:
        """The key of two adjacent parts in ``_merge_rank``; None (no key) if one of them is
        a user-defined piece. With ``rev``, note each UNUSED piece a pair forms: merge asks
        about pairs in the order bpe_model.cc pushes them (core.bpe.merge's subtle note)."""
        unused = self._unused

        def key(left: str, right: str) -> str | None:
            if type(left) is _UserPiece or type(right) is _UserPiece:
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
        get = self.vocab.get
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
        parts = [_UserPiece(c) if user else c for c, user in self._matcher.split(text)]
        joins = merge_steps(parts, self._merge_rank, key=self._pair_key(None), heap=self._heap_only)
        steps: list[BPEStep] = []
        for at, _, parts_before, parts_after in joins:
            before = tuple(map(str, parts_before))  # (plain strings: no _UserPiece shown)
            merged = parts_after[at]
            steps.append(BPEStep(rank=self._normal[merged], left=before[at],
                                 right=before[at + 1], merged=merged, position=at,
                                 before=before, after=tuple(map(str, parts_after))))  # fmt: skip
        return steps


def _cut_regex(normal: dict[str, int]) -> re.Pattern[str] | None:
    """Where a normalized text can be cut into independent words (proof in SentencePieceBPE):
    before a ▁ whose left neighbour never precedes a ▁ inside a piece, and after a ▁ whose
    right neighbour never follows one inside a piece."""
    before: set[str] = set()  # characters seen right before a ▁ inside a piece
    after: set[str] = set()  # characters seen right after a ▁ inside a piece
    for s in normal:
        k = s.find(SPACE)
        while k >= 0:
            if k > 0:
                before.add(s[k - 1])
            if k + 1 < len(s):
                after.add(s[k + 1])
            k = s.find(SPACE, k + 1)
    parts = []

    def cls(chars: set[str]) -> str:
        return "".join(re.escape(c) for c in sorted(chars))

    parts.append(f"(?<![{cls(before)}])(?={SPACE})" if before else f"(?={SPACE})")
    parts.append(f"(?<={SPACE})(?![{cls(after)}])" if after else f"(?<={SPACE})")
    return re.compile("|".join(parts))


# ─── the decoder ────────────────────────────────────────────────────────────────────────


def _utf8_char_len(data: bytes, i: int) -> int:
    """Length of the valid UTF-8 character at ``data[i]``, or 0 if it is not one
    (SentencePiece's DecodeUTF8: no overlong forms, no surrogates, nothing past U+10FFFF)."""
    b = data[i]
    if b >= 0xF8 or 0x80 <= b < 0xC0:
        return 0
    n = 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
    if i + n > len(data):
        return 0
    try:
        data[i : i + n].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return n


class SentencePieceDecoder:
    """SentencePiece's ``Decode`` as a pipeline :class:`Decoder`: piece strings in, one
    string per piece out (joined, they are the decoded text).

    >>> d = SentencePieceDecoder(control={"<s>"}, byte_pieces=True)
    >>> d.decode_chain(["<s>", "▁Hello", "▁", "<0xE2>", "<0x82>", "<0xAC>", "<0xFF>", "<unk>"])
    ['', 'Hello', ' ', '', '', '€', '�', ' ⁇ ']
    """

    def __init__(
        self,
        *,
        control: Iterable[str] = (),
        unk_piece: str = "<unk>",
        unk_surface: str = " \u2047 ",
        byte_pieces: bool = False,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = False,
        piece_type: dict[str, int] | None = None,
    ) -> None:
        # a piece the file does not have is "unknown" to PieceToId (and decoded as is)
        self._default = NORMAL if piece_type is None else UNKNOWN
        #: the type of a piece the table lacks; public, as every setting that changes the
        #: output is, so that core.fingerprint sees it
        self.default_type = self._default
        if piece_type is None:
            piece_type = {c: CONTROL for c in control}
            piece_type[unk_piece] = UNKNOWN
            if byte_pieces:
                piece_type.update(dict.fromkeys(_BYTE_PIECES, BYTE))
        #: piece -> type, as PieceToId then the id's type would answer (reserved first)
        self.piece_type = piece_type
        self.unk_piece = unk_piece
        self.unk_surface = unk_surface
        self.strip_first_space = add_dummy_prefix or remove_extra_whitespaces
        self.remove_extra_whitespaces = remove_extra_whitespaces

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = [""] * len(tokens)
        types = self.piece_type
        is_bos_ws = True  # still expecting the dummy prefix's ▁ to drop
        bos_ws_seen = False
        text_empty = True
        byte_start = 0

        def flush(begin: int, end: int) -> None:
            nonlocal text_empty
            if begin >= end:
                return
            data = bytes(_BYTE_PIECES[tokens[i]] for i in range(begin, end))
            k = 0
            while k < len(data):
                n = _utf8_char_len(data, k)
                if n == 0:
                    out[begin + k] = "\ufffd"
                    k += 1
                else:
                    out[begin + k + n - 1] = data[k : k + n].decode("utf-8")
                    k += n
            text_empty = False

        for i, tok in enumerate(tokens):
            kind = types.get(tok, self._default)
            if kind == BYTE:
                continue
            flush(byte_start, i)
            byte_start = i + 1
            if bos_ws_seen or not text_empty:
                is_bos_ws = False
            bos_ws_seen = False
            if kind == CONTROL:
                piece = ""
            elif kind == UNKNOWN:
                piece = self.unk_surface if tok == self.unk_piece else tok
            else:
                piece = tok
                if is_bos_ws and self.strip_first_space and piece.startswith(SPACE):
                    piece = piece[1:]
                    bos_ws_seen = not self.remove_extra_whitespaces
                piece = piece.replace(SPACE, " ")
            out[i] = piece
            if piece:
                text_empty = False
        flush(byte_start, len(tokens))
        return out

    def decode(self, tokens: list[str]) -> str:
        return "".join(self.decode_chain(tokens))


# ─── the file ───────────────────────────────────────────────────────────────────────────


class SentencePieceWords:
    """A pre-tokenizer made of :meth:`SentencePieceBPE.words`: it shows the pages where no
    token can cross (SentencePiece itself has no pre-tokenizer), so "why this split" traces
    one word instead of the whole text. Encoding is unchanged: each word is what the model
    would cut anyway.
    """

    description = "SentencePiece words (cut where no piece can cross)"

    def __init__(self, model: SentencePieceBPE) -> None:
        self.model = model

    def split(self, pieces: list[Piece]) -> list[Piece]:
        out: list[Piece] = []
        for piece in pieces:
            start = 0
            for word in self.model.words(piece.text):
                out.append(piece[start : start + len(word)])
                start += len(word)
        return out


@dataclass(frozen=True)
class SentencePieceModel:
    """A checked ``.model``: the parts :func:`sentencepiece_tokenizer` puts together."""

    proto: ModelProto
    normalizer: SentencePieceNormalizer
    model: SentencePieceBPE
    decoder: SentencePieceDecoder
    bos_id: int  # -1 when the file has no CONTROL piece named trainer_spec.bos_piece
    eos_id: int


def _check_pieces(proto: ModelProto, name: str) -> None:
    """What model_interface.cc's InitializePieces refuses, refused the same way."""
    if not proto.pieces:
        raise FormatError(
            f"{name}: the model has no pieces; is this a SentencePiece model?"
        )
    seen: dict[str, int] = {}
    unk = -1
    byte_found: set[int] = set()
    byte_fallback = proto.trainer_spec.byte_fallback
    for i, p in enumerate(proto.pieces):
        if not p.piece:
            raise FormatError(
                f"{name}: piece {i} is empty; SentencePiece refuses such a model"
            )
        # (sentencepiece before 0.2.3 kept normal and reserved pieces in two maps, so a
        # normal "<s>" beside the control "<s>" loaded; 0.2.3 refuses it, as we do)
        first = seen.setdefault(p.piece, i)
        if first != i:
            raise FormatError(
                f"{name}: piece {p.piece!r} is defined twice (IDs {first} and {i})"
            )
        if p.type == UNKNOWN:
            if unk >= 0:
                raise FormatError(f"{name}: two <unk> pieces (IDs {unk} and {i})")
            unk = i
        if p.type == BYTE:
            if not byte_fallback:
                raise FormatError(
                    f"{name}: byte piece {p.piece!r} (ID {i}) although byte_fallback is off"
                )
            if p.piece not in _BYTE_PIECES:
                raise FormatError(
                    f"{name}: {p.piece!r} (ID {i}) is not a valid byte piece"
                )
            byte_found.add(_BYTE_PIECES[p.piece])
    if unk < 0:
        raise FormatError(
            f"{name}: no piece of type UNKNOWN (<unk>); SentencePiece needs one"
        )
    if byte_fallback and len(byte_found) != 256:
        raise FormatError(
            f"{name}: byte_fallback is on but only {len(byte_found)} of the 256 byte pieces "
            "<0x00>..<0xFF> are there"
        )


def load_sentencepiece_model(
    data: bytes, *, name: str = "tokenizer.model"
) -> SentencePieceModel:
    """Parse and check a ``.model`` file; build its normalizer, BPE model and decoder."""
    proto = parse_model_proto(data, name=name)
    spec = proto.trainer_spec
    if spec.model_type != BPE:
        kind = _MODEL_NAMES.get(spec.model_type, str(spec.model_type))
        if not proto.pieces:
            raise FormatError(
                f"{name}: the model has no pieces; is this a SentencePiece model?"
            )
        raise FormatError(
            f"{name}: SentencePiece {kind} models are not supported yet; BPE ones are "
            "(trainer_spec.model_type = BPE, as Llama 2 and Mistral use)"
        )
    _check_pieces(proto, name)
    deno = proto.denormalizer_spec
    if deno is not None and deno.precompiled_charsmap:
        raise FormatError(
            f"{name}: the model has a denormalization rule (denormalizer_spec), which is not "
            "supported yet"
        )
    user = [p.piece for p in proto.pieces if p.type == USER_DEFINED]
    normalizer = SentencePieceNormalizer.from_spec(
        proto.normalizer_spec,
        treat_whitespace_as_suffix=spec.treat_whitespace_as_suffix,
        user_defined_symbols=user,
        name=name,
    )
    model = SentencePieceBPE(proto.pieces, byte_fallback=spec.byte_fallback)
    piece_type = {s: proto.pieces[i].type for s, i in model.vocab.items()}
    decoder = SentencePieceDecoder(
        unk_piece=proto.pieces[model.unk_id].piece,
        unk_surface=spec.unk_surface,
        add_dummy_prefix=proto.normalizer_spec.add_dummy_prefix,
        remove_extra_whitespaces=proto.normalizer_spec.remove_extra_whitespaces,
        piece_type=piece_type,
    )

    def control_id(piece: str) -> int:
        found = model.piece_to_id(piece)
        return found if proto.pieces[found].type == CONTROL else -1

    loaded = SentencePieceModel(
        proto,
        normalizer,
        model,
        decoder,
        control_id(spec.bos_piece),
        control_id(spec.eos_piece),
    )
    # SentencePiece runs the file's self-test samples when it loads it; so do we
    for text, expected in proto.self_test_samples:
        normalized = normalizer.normalize_str(text)
        got = " ".join(
            model.id_to_token(i) or "" for i, _, _ in model.tokenize(normalized)
        )
        if got != expected:
            raise FormatError(
                f"{name}: the file's own self-test fails here: {text!r} should give "
                f"{expected!r}, we get {got!r}"
            )
    return loaded


def sentencepiece_tokenizer(
    data: bytes, *, name: str = "tokenizer.model"
) -> PipelineTokenizer:
    """A SentencePiece BPE ``.model`` file as a :class:`PipelineTokenizer`.

    IDs equal ``SentencePieceProcessor.encode(text)``; ``add_special_tokens=True`` puts the
    BOS piece first (``encode(text, add_bos=True)``), ``decode`` equals its ``decode``.
    The special tokens are the CONTROL pieces; like SentencePiece, encoding never matches
    them in the text. Raises :class:`FormatError` for a malformed file or an unsupported
    model (Unigram, WORD, CHAR; a denormalization rule).
    """
    loaded = load_sentencepiece_model(data, name=name)
    pieces = loaded.proto.pieces
    bos = loaded.bos_id
    template = (
        Template((bos,), (), f"{pieces[bos].piece} $A") if bos >= 0 else Template()
    )
    tok = PipelineTokenizer(
        model=loaded.model,
        normalizer=loaded.normalizer,
        # subtle: without byte fallback a run of unknown characters is one <unk> even across
        # words, so words are shown only when byte fallback keeps them independent
        pre_tokenizer=SentencePieceWords(loaded.model) if loaded.model.byte_fallback else None,
        template=template,
        decoder=loaded.decoder,
        name=name,
        kind="SentencePiece BPE",
        pattern="none: BPE over the whole normalized text (shown cut where no token crosses)",
    )
    # Control pieces are special but never matched in the input text, so they are not
    # PipelineTokenizer added tokens (those always are matched): listed here instead.
    controls = {p.piece: i for i, p in enumerate(pieces) if p.type == CONTROL}
    tok.special_tokens = list(controls)
    tok.special_token_ids = controls
    return tok
