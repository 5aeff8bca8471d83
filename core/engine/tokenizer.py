"""The byte-level BPE :class:`Tokenizer`: encode, stream-encode and decode.

The pipeline, as in GPT-2 and tiktoken:

1. cut the text at special tokens (the longest one wins where two overlap);
2. cut each ordinary piece into pre-tokens with the pattern's regex;
3. in each pre-token, start from its UTF-8 bytes and apply merges in *rank* order (the
   lowest-ranked adjacent pair first, every occurrence left to right), not in list order.

>>> vocab = {i: bytes([i]) for i in range(256)}
>>> vocab.update({256: b"bc", 257: b"ab"})
>>> tok = Tokenizer(vocab, [(b"b", b"c"), (b"a", b"b")])
>>> [tok.vocab[i] for i in tok.encode("abcde")]   # (b, c) ranks before (a, b)
[b'a', b'bc', b'd', b'e']
>>> tok.decode(tok.encode("abcde"))
'abcde'

Speed (pure Python against tiktoken's Rust; see benchmarks/bench_encode.py): encoding goes
through :class:`core.engine.text_encoder.TextEncoder` (a bounded pre-token cache, ASCII fast paths,
long texts cut where it is safe); decode joins the tokens' bytes and decodes UTF-8 in one
call (:func:`core.native.join_text`: one C pass where built, else ``itemgetter`` chunks).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from core.chat import ChatMethods, with_chat
from core.engine import details, vocab_index
from core.engine.basics import check_id, gc_paused
from core.engine.bytes_unicode import to_gpt2_str
from core.engine.details import DecodeDetails, EncodingDetails, MergeNode, MergeStep
from core.engine.fingerprint import fingerprint_of
from core.engine.pickles import load_pickles, save_pickles
from core.engine.pretoken_bpe import PretokenBPE
from core.engine.pretokenize import compile_pattern
from core.engine.ranks import merges_from_ranks, split_by_rank
from core.engine.regex_compat import HeldPattern
from core.engine.template import Template
from core.engine.text_encoder import STREAM_CACHE_SIZE, TextEncoder, check_text
from core.errors import PlaygroundError
from core.interface import Capabilities
from core.native import join_text, join_tokens

__all__ = ["Tokenizer", "DEFAULT_CACHE_SIZE", "STREAM_CACHE_SIZE"]

#: Entries in the pre-token cache. 2**18 holds every distinct pre-token of 41 MB of English
#: docs (144k); at ~150 bytes an entry a full cache is ~40 MB, reached only after many MB of
#: varied text.
DEFAULT_CACHE_SIZE = 1 << 18

_SAVABLE = Capabilities(details=True, byte_level=True, replay=True, export=True, save=True,
                        merges=True)
_NOT_SAVABLE = Capabilities(details=True, byte_level=True, replay=True, export=True, merges=True)


class Tokenizer(PretokenBPE, ChatMethods):  # chat_template, apply_chat_template; _bpe_str
    """Byte-level BPE tokenizer over the CS336 data contract.

    ``vocab``: token ID -> bytes (it must hold all 256 single bytes); ``merges``: pairs in
    rank order; ``special_tokens``: strings never split (one missing from the vocab gets the
    next free ID); ``pattern``: ``"gpt2"``, ``"cl100k"``, ``"o200k"`` or a regex.

    ``merges=None``: merge by *rank*, as tiktoken does. There is no merge list; an ID is its
    token's rank, and BPE repeatedly joins the adjacent pair whose joined bytes are the token
    with the lowest ID. Any rank file loads this way, including Meta's Llama 3, where some
    tokens cannot be built from two lower-ranked ones (those are reached only whole).
    :attr:`merges` is then derived from the ranks when something asks for it.

    ``ignore_merges=True``: a pre-token whose bytes are a token becomes that token without
    running BPE. tiktoken always does this (so rank mode and the presets set it) and Hugging
    Face has the same switch; plain BPE (the default) can split such a pre-token differently
    when its merges would not rebuild the token from its own bytes.

    ``template``: what ``encode(text, add_special_tokens=True)`` adds (a model's BOS/EOS).
    ``specials_in_text``: whether a special token typed in the text becomes its ID (as in
    tiktoken's ``allowed_special="all"`` and Hugging Face); Mistral's own code treats such
    text as ordinary text (False).
    ``cache_size``: entries in the pre-token cache; 0 disables caching.

    >>> ranks = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"bc", 258: b"abc"}
    >>> tok = Tokenizer(ranks, None)
    >>> tok.encode("abc"), tok.encode("xabc")   # b"abc" whole; then a+b (256) before b+c (257)
    ([258], [120, 258])
    >>> tok.merges
    [(b'a', b'b'), (b'b', b'c'), (b'ab', b'c')]
    """

    def __init__(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]] | None,
        special_tokens: Iterable[str] | Mapping[str, int] | None = None,
        *,
        pattern: str = "gpt2",
        name: str = "",
        ignore_merges: bool = False,
        template: Template = Template(),
        specials_in_text: bool = True,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self._init(vocab, merges, None, special_tokens, pattern=pattern, name=name,
                   ignore_merges=ignore_merges, template=template,
                   specials_in_text=specials_in_text, cache_size=cache_size)  # fmt: skip

    @classmethod
    def from_id_merges(
        cls, vocab: Mapping[int, bytes], merges: Sequence[tuple[int, ...]] | vocab_index.IdColumns,
        special_tokens: Iterable[str] | Mapping[str, int] | None = None, **options: Any,
    ) -> Tokenizer:  # fmt: skip
        """``Tokenizer(vocab, [(vocab[l], vocab[r]) for l, r, *_ in merges], ...)`` (the same
        ``options``) for merges given by token ID (or as :class:`~core.engine.vocab_index.IdColumns`),
        as big files hold them, without the round trip through bytes: :attr:`merges` is built
        on first use. A third item (the merged ID a table keeps) is not trusted: the merged
        token is looked up by its bytes.

        >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"abc"}
        >>> tok = Tokenizer.from_id_merges(vocab, [(98, 99), (97, 256)])
        >>> tok.encode("abcd"), tok.merges
        ([257, 100], [(b'b', b'c'), (b'a', b'bc')])
        """
        tok = cls.__new__(cls)
        tok._init(vocab, None, merges, special_tokens, **options)
        return tok

    @gc_paused()  # (a big vocab makes millions of objects, none of them in a cycle)
    def _init(
        self, vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]] | None,
        id_merges: Sequence[tuple[int, ...]] | vocab_index.IdColumns | None,
        special_tokens: Iterable[str] | Mapping[str, int] | None, *, pattern: str = "gpt2",
        name: str = "", ignore_merges: bool = False, template: Template = Template(),
        specials_in_text: bool = True, cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:  # fmt: skip
        self.vocab: dict[int, bytes] = vocab_index.checked_vocab(vocab)
        self.by_rank = merges is None and id_merges is None
        # byte pairs: our copy; ID pairs: their bytes on first use (the `merges` property)
        self._merges: list[tuple[bytes, bytes]] | None = (
            None if merges is None else vocab_index.copied_merges(merges)
        )
        self.pattern = pattern
        self.name = name
        self.ignore_merges = bool(ignore_merges) or self.by_rank
        self.template = template
        self.specials_in_text = bool(specials_in_text)
        self._regex = compile_pattern(pattern)  # raises a clear error for a broken regex

        # Special tokens: reuse the vocab's ID for one already there, else append. Then
        # bytes -> ID for ordinary tokens (the lowest ID wins if bytes repeat).
        by_bytes = vocab_index.lowest_ids(self.vocab, ())
        repeats = len(by_bytes) != len(self.vocab)
        self.special_tokens, self.special_token_ids = vocab_index.place_specials(
            self.vocab, special_tokens, by_bytes
        )
        self._special_ids = frozenset(self.special_token_ids.values())
        encoder = vocab_index.without_specials(
            by_bytes, self.vocab, self._special_ids, repeats=repeats
        )
        self._encoder = encoder
        self._byte_ids = vocab_index.single_byte_ids(encoder)  # (refuses a vocab without one)

        self._pair_ranks: dict[tuple[int, int], int] = {}
        self._merged: tuple[int, ...] = ()
        self._merge_pairs: tuple[tuple[int, int], ...] = ()
        self._made: dict[int, int] | None = None  # merged ID -> first rank making it (lazy)
        self._whole_only: list[bytes] = []
        if self._merges is not None:
            self._index_merges(self._merges, encoder)
        # ID -> bytes as lists (core.engine.vocab_index.decode_tables), once the special tokens'
        # IDs are known not to be too sparse for lists that long
        vocab_index.check_dense(self.vocab)
        self._strict_table, self._replace_table = vocab_index.decode_tables(self.vocab)
        if id_merges is not None:  # by ID: their bytes only if needed (or to name a problem)
            self._merges, self._pair_ranks, self._merged, self._merge_pairs = (
                vocab_index.index_id_merges(id_merges, self.vocab, encoder,
                                            specials=self._special_ids, table=self._strict_table)
            )  # fmt: skip
        self.cache_size = max(0, int(cache_size))
        # text -> IDs around BPE: special tokens, pre-tokens, the cache, safe cuts
        matched = self.special_token_ids if self.specials_in_text else {}
        self._text = TextEncoder(pattern=pattern, specials=matched, bpe=self._bpe_str,
                                 cache_size=self.cache_size, fast_table=self._fast_table)  # fmt: skip
        self._pretoken_cache = self._text.cache  # (read by tests and benchmarks)
        self._findall = self._text.findall  # (likewise)

    def _index_merges(
        self, merges: Sequence[tuple[bytes, bytes]], encoder: Mapping[bytes, int]
    ) -> None:
        """(left ID, right ID) -> rank, and rank -> merged ID: BPE works on ints."""
        self._pair_ranks, self._merged, self._merge_pairs = vocab_index.index_merges(
            merges, encoder
        )

    # ------------------------------------------------------------------------------------
    # Construction helpers
    # ------------------------------------------------------------------------------------

    @classmethod
    def from_files(
        cls,
        vocab_path: str | os.PathLike[str],
        merges_path: str | os.PathLike[str],
        special_tokens: Iterable[str] | None = None,
        *,
        pattern: str = "gpt2",
        name: str = "",
    ) -> Tokenizer:
        """Load CS336 ``vocab.pkl`` + ``merges.pkl`` through the restricted unpickler (a
        pickle that tries to run code is refused, nothing runs)."""
        vocab, merges = load_pickles(vocab_path, merges_path)
        return cls(vocab, merges, special_tokens, pattern=pattern, name=name)

    def save(self, vocab_path: str | os.PathLike[str], merges_path: str | os.PathLike[str]) -> None:
        """Write ``vocab.pkl`` + ``merges.pkl`` (plain pickles, as the CS336 code does)."""
        save_pickles(self.vocab, self.merges, vocab_path, merges_path)

    # ------------------------------------------------------------------------------------
    # Read-only views of the BPE tables (for core.engine.details and the formats)
    # ------------------------------------------------------------------------------------

    @property
    def byte_ids(self) -> tuple[int, ...]:
        """The token ID of each single byte 0..255."""
        return self._byte_ids

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges in rank order. In rank mode (``merges=None``) they are derived from the
        ranks on first use: each token that two lower-ranked tokens build, with its pair;
        :attr:`whole_only` lists the tokens no such pair builds. Merges given by ID
        (:meth:`from_id_merges`) become byte pairs on first use too."""
        if self._merges is None:
            if self.by_rank:
                self._merges, self._whole_only = merges_from_ranks(self._encoder)
                self._index_merges(self._merges, self._encoder)
            else:
                token = self.vocab.__getitem__
                self._merges = [(token(left), token(right)) for left, right in self._merge_pairs]
        return self._merges

    def _ranked(self) -> None:
        """In rank mode, derive the merge tables on first use (:attr:`merges`)."""
        if self.by_rank and self._merges is None:
            self.merges  # noqa: B018

    @property
    def whole_only(self) -> list[bytes]:
        """Tokens that no two lower-ranked tokens build (rank mode; e.g. 90 of Llama 3's):
        BPE never makes them, so only a pre-token equal to one gives it. ``[]`` otherwise."""
        self._ranked()
        return self._whole_only

    @property
    def ids_by_bytes(self) -> Mapping[bytes, int]:
        """``token bytes -> ID`` of every ordinary token (special tokens left out; the lowest
        ID where bytes repeat). In rank mode an ID is the token's rank: this is the rank table.

        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, None).ids_by_bytes[b"ab"]
        256
        """
        return MappingProxyType(self._encoder)

    @property
    def pair_ranks(self) -> Mapping[tuple[int, int], int]:
        """``(left ID, right ID) -> merge rank`` (the lowest rank if a pair repeats)."""
        self._ranked()
        return MappingProxyType(self._pair_ranks)

    @property
    def merged_ids(self) -> tuple[int, ...]:
        """The ID each merge makes, by rank."""
        self._ranked()
        return self._merged

    @property
    def merge_pair_ids(self) -> tuple[tuple[int, int], ...]:
        """The ``(left ID, right ID)`` each merge joins, by rank."""
        self._ranked()
        return self._merge_pairs

    def pair_merge(self, left: int, right: int) -> tuple[int, int] | None:
        """``(rank, merged ID)`` of the merge joining tokens ``left`` and ``right`` (adjacent
        in that order), or None. In rank mode the rank is the joined token's ID.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")])
        >>> tok.pair_merge(97, 98), tok.pair_merge(98, 97)
        ((0, 256), None)
        """
        if self.by_rank:
            joined = self._encoder.get(self.vocab[left] + self.vocab[right])
            return None if joined is None else (joined, joined)
        rank = self._pair_ranks.get((left, right))
        return None if rank is None else (rank, self._merged[rank])

    def parts_of(self, token_id: int) -> tuple[int, int, int] | None:
        """``(rank, left ID, right ID)`` of the merge that makes ``token_id``, or None for a
        single byte, a special token, or (rank mode) a token reached only whole.

        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, None).parts_of(256)
        (256, 97, 98)
        """
        if token_id in self._special_ids:
            return None
        if self.by_rank:
            split = split_by_rank(self.vocab[token_id], self._encoder, token_id)
            if split is None:
                return None
            return (token_id, self._encoder[split[0]], self._encoder[split[1]])
        if self._made is None:
            self._made = {}
            for rank, merged_id in enumerate(self._merged):
                self._made.setdefault(merged_id, rank)
        made_rank = self._made.get(token_id)
        if made_rank is None:
            return None
        return (made_rank, *self._merge_pairs[made_rank])

    @property
    def pretoken_regex(self) -> HeldPattern:
        """The compiled pre-tokenizer pattern."""
        return self._regex

    def pretoken_ids(self, pretoken: str) -> tuple[int, ...]:
        """The IDs of one pre-token (ordinary text, no special token), through the cache.

        >>> Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"ab"}, [(b"a", b"b")]).pretoken_ids("abc")
        (256, 99)
        """
        return self._pretoken_cache[pretoken]

    @property
    def kind(self) -> str:
        """What kind of tokenizer this is, in a few words (pipelines say theirs too)."""
        return "byte-level BPE (by rank)" if self.by_rank else "byte-level BPE"

    # ------------------------------------------------------------------------------------
    # The door every tokenizer shares (core.interface.TokenizerInterface)
    # ------------------------------------------------------------------------------------

    #: Byte-level BPE never needs an unknown token: any text is made of the 256 bytes.
    unk_id: int | None = None
    _fingerprint: str | None = None  # computed on first use

    @property
    def capabilities(self) -> Capabilities:
        """Everything a page can show. The library keeps the vocab, a merge list, the
        special tokens and the pattern: not ranks, ``ignore_merges``, a template or
        ``specials_in_text=False``, so a tokenizer with one of those cannot be saved there
        exactly (its own file keeps them)."""
        plain = not (self.ignore_merges or self.template) and self.specials_in_text
        # (rank mode sets ignore_merges); chat: a chat template, its own or built in (presets)
        return with_chat(self, _SAVABLE if plain else _NOT_SAVABLE)

    def id_to_piece(self, token_id: int) -> str:
        """The token as GPT-2's files write it (``b" the"`` -> ``"Ġthe"``); ``""`` for an ID
        outside the vocabulary.

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).id_to_piece(32)
        'Ġ'
        """
        token = self.vocab.get(token_id)
        return "" if token is None else to_gpt2_str(token)

    def fingerprint(self) -> str:
        """A content hash of everything that changes the output: vocab (special tokens
        included), merges (none in rank mode: the vocab is the ranks), special tokens,
        pattern, template and the two switches. Computed once.

        >>> base = {i: bytes([i]) for i in range(256)}
        >>> Tokenizer(base, []).fingerprint() == Tokenizer(base, [], pattern="cl100k").fingerprint()
        False
        """
        if self._fingerprint is None:
            self._fingerprint = fingerprint_of(
                # (rank mode derives _merges from the vocab on first use: not a part)
                "Tokenizer", self.vocab, None if self.by_rank else self.merges,
                self.special_tokens, self.special_token_ids, self.pattern, self.template,
                self.ignore_merges, self.specials_in_text,
            )  # fmt: skip
        return self._fingerprint

    @property
    def n_vocab(self) -> int:
        """One more than the largest ID (as tiktoken counts; ``len(vocab)`` when IDs have no
        gaps, which holds except for cl100k_base's unused IDs 100261-100275)."""
        return max(self.vocab, default=-1) + 1

    def __repr__(self) -> str:
        return (
            f"Tokenizer(name={self.name!r}, n_vocab={self.n_vocab}, "
            f"merges={'by rank' if self.by_rank and self._merges is None else len(self._merged)}, "
            f"special_tokens={self.special_tokens!r}, pattern={self.pattern!r})"
        )

    def clear_cache(self) -> None:
        """Forget cached pre-token results (e.g. to time a cold encode)."""
        self._pretoken_cache.reset()

    # ------------------------------------------------------------------------------------
    # Encoding
    # ------------------------------------------------------------------------------------

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Token IDs of ``text``; special tokens in it become their own IDs (unless
        ``specials_in_text`` is off). ``add_special_tokens=True`` adds the model's template
        (BOS/EOS), as Hugging Face's ``encode`` does by default.

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"])
        >>> tok.encode("hi<|eot|>")
        [104, 105, 256]
        """
        check_text(text)
        ids = self._text.encode(text)
        return self.template.apply(ids) if add_special_tokens and self.template else ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Like :meth:`encode` but special tokens are plain text (tiktoken's
        ``encode_ordinary``).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"])
        >>> len(tok.encode_ordinary("<|eot|>"))
        7
        """
        check_text(text)
        return self._text.encode_ordinary(text)

    def encode_iterable(
        self, iterable: Iterable[str], *, cache_size: int = STREAM_CACHE_SIZE
    ) -> Iterator[int]:
        """Lazily yield the IDs of the concatenated strings (e.g. the lines of an open file),
        exactly those of ``encode("".join(iterable))``, in bounded memory: text is encoded up
        to each safe cut and dropped, through a cache of ``cache_size`` entries private to
        the stream (:meth:`core.engine.text_encoder.TextEncoder.stream`).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|eot|>"])
        >>> list(tok.encode_iterable(["a<|e", "ot|>b"]))
        [97, 256, 98]
        """
        return self._text.stream(iterable, cache_size=cache_size)

    # ------------------------------------------------------------------------------------
    # Decoding
    # ------------------------------------------------------------------------------------

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The concatenated bytes of the tokens; an ID outside the vocab is an error here
        (bytes cannot show it; :meth:`decode` turns it into U+FFFD).

        >>> Tokenizer({i: bytes([i]) for i in range(256)}, []).decode_bytes([104, 105])
        b'hi'
        """
        ids = _id_list(ids)
        try:
            return join_tokens(self._strict_table, ids)
        except (TypeError, IndexError):  # a bad item somewhere: find it and say which
            return self._join_each(ids, strict=True)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of the token IDs. Invalid UTF-8 becomes U+FFFD (``errors="replace"``), and so
        does an integer that is not an ID of this vocab (negative, too large, or a gap). A
        non-integer item raises :class:`PlaygroundError` naming it and its index. ``bool``
        is an ``int`` in Python and counts as ID 0/1, as in tiktoken (checking every item's
        type would cost a third of decode's time; :func:`~core.engine.details.parse_ids` already
        refuses ``true``/``false`` in typed text).

        >>> tok = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> tok.decode([104, 105, 99999, 0xe4])
        'hi\\ufffd\\ufffd'
        """
        ids = _id_list(ids)
        try:
            return join_text(self._replace_table, ids)
        except (TypeError, IndexError):  # a bad item somewhere: find it and say which
            return self._join_each(ids, strict=False).decode("utf-8", "replace")

    def _join_each(self, ids: list[int], *, strict: bool) -> bytes:
        """The join one item at a time, for a list the fast join refused: the error naming
        the first bad item, or (``strict=False``) 0xFF for each integer that is no ID."""
        out = []
        for index, item in enumerate(ids):
            token = self.vocab.get(check_id(item, index))
            if token is None:
                if strict:
                    raise PlaygroundError(
                        f"ID {item} at index {index} is not in this vocabulary (IDs run from 0 "
                        f"to {self.n_vocab - 1}); decode() shows such IDs as U+FFFD instead."
                    )
                # subtle: 0xFF never occurs in UTF-8, so it decodes to exactly one U+FFFD
                # and also ends any unfinished character before it, as a gap should.
                token = b"\xff"
            out.append(token)
        return b"".join(out)

    # ------------------------------------------------------------------------------------
    # Details for the UI (see core.engine.details)
    # ------------------------------------------------------------------------------------

    def encode_details(self, text: str, *, add_special_tokens: bool = False) -> EncodingDetails:
        """Per-token spans, partial-UTF-8 flags and pre-token boundaries of ``text``."""
        return details.encode_details(self, text, add_special_tokens=add_special_tokens)

    def merge_trace(self, pretoken: str) -> list[MergeStep]:
        """The merges BPE applies to one pre-token, in order, with their ranks."""
        return details.merge_trace(self, pretoken)

    def decode_details(self, ids: Iterable[int]) -> DecodeDetails:
        """Per-ID bytes and text, and which U+FFFD in the output came from which IDs."""
        return details.decode_details(self, ids)

    def merge_tree(self, token_id: int) -> MergeNode:
        """How a token is built from single bytes, merge by merge."""
        return details.merge_tree(self, token_id)


# ----------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------


def _id_list(ids: Iterable[int]) -> list[int]:
    """``ids`` as a list (itself if it is one); a :class:`PlaygroundError` for a str or bytes,
    whose items are no IDs.

    >>> _id_list(range(3))
    [0, 1, 2]
    """
    if isinstance(ids, list):
        return ids
    if isinstance(ids, (str, bytes)):
        raise PlaygroundError(
            f"decode takes a list of token IDs, not {type(ids).__name__}; "
            "use parse_ids() to read IDs typed as text"
        )
    return list(ids)
