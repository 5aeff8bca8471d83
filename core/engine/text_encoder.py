"""Text to token IDs around BPE: special tokens cut out, pre-tokens looked up in a bounded
cache, long texts and streams cut only where no pre-token can straddle.

:class:`core.engine.tokenizer.Tokenizer` owns the BPE tables; this module owns the text around
them. Speed (pure Python against tiktoken's Rust; see benchmarks/bench_encode.py):

- BPE results are cached per pre-token in a dictionary of bounded size that belongs to the
  tokenizer, so a warm tokenizer mostly does look-ups in C (``map(cache.__getitem__,
  pretokens)``). The cache is cleared wholesale when full: cheaper than LRU bookkeeping on
  the hot path, and a server running for weeks stays bounded;
- ASCII text is pre-tokenized by equivalent `re` patterns (several times faster than
  `regex`); text is cut only where no pre-token can straddle (:func:`core.engine.pretokenize.last_cut`).

>>> enc = TextEncoder(pattern="gpt2", specials={"<|eot|>": 9}, bpe=lambda p: (len(p),),
...                   cache_size=100)
>>> enc.encode("Hi you<|eot|>!")      # "Hi", " you", the special token, "!"
[2, 4, 9, 1]
>>> list(enc.stream(["Hi y", "ou<|eot", "|>!"]))
[2, 4, 9, 1]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import reduce
from operator import iconcat
from typing import Any

from core.engine.basics import BULK_TEXT, gc_paused
from core.engine.bpe import encode_words
from core.engine.pretoken_split import splitter
from core.engine.pretokenize import (
    PATTERNS,
    ascii_pattern,
    compile_pattern,
    cut_outside_specials,
    last_cut,
    mixed_regions,
    resolve_pattern,
    special_splitter,
)
from core.engine.regex_compat import GIL_HELD_CHARS
from core.errors import PlaygroundError

__all__ = ["STREAM_CACHE_SIZE", "PretokenCache", "TextEncoder", "check_text"]

#: Entries in the private cache of one :meth:`TextEncoder.stream`: ~2.5 MB at most, and it
#: still answers ~95% of the look-ups on English text.
STREAM_CACHE_SIZE = 1 << 14

_MAX_PRETOKEN_KEY = 256  # chars; longer pre-tokens are not cached (rare, and big)
# chars; encode() cuts longer ordinary text at safe places into segments of about this size:
# temporaries stay small, the (many) all-ASCII segments skip the non-ASCII handling, and a
# segment's regex matches keep the GIL (core.engine.regex_compat.HeldPattern)
_MAX_SEGMENT = GIL_HELD_CHARS
_STREAM_BUFFER = 1 << 16  # chars a stream gathers before looking for a safe cut

Compute = Callable[[str], tuple[int, ...]]
#: The C twin's table of the same BPE as a cache's ``compute`` (``RankTable`` or
#: ``PairTable`` of tokplay_native.bpe), or None for the pure path.
FastTable = Callable[[], Any]


class PretokenCache(dict):
    """``dict`` that computes missing values and clears itself when full.

    Hits go through ``dict.__getitem__`` in C (``map(cache.__getitem__, keys)``); only misses
    run Python code.

    >>> cache = PretokenCache(lambda p: (len(p),), maxsize=10, maxkey=3)
    >>> cache["ab"], cache["abcd"], sorted(cache)   # "abcd" is too long to keep
    ((2,), (4,), ['', 'ab'])
    """

    __slots__ = ("_compute", "_maxsize", "_maxkey")

    def __init__(self, compute: Compute, maxsize: int, maxkey: int) -> None:
        super().__init__()
        self._compute = compute
        self._maxsize = maxsize
        self._maxkey = maxkey
        self.reset()

    def reset(self) -> None:
        """Forget every result but the empty pre-token's."""
        self.clear()
        self[""] = ()
    def extend(self, out: list[int], pretokens: list[str], table: Any = None) -> None:
        """``out += self[p]`` for each pre-token, hits and misses alike. With ``table`` (the
        C twin's table of the same BPE as ``compute``) the loop runs in C
        (``tokplay_native.bpe.encode_words``): the same IDs, the same entries kept.

        >>> cache, out = PretokenCache(lambda p: (len(p),), maxsize=10, maxkey=3), [9]
        >>> cache.extend(out, ["ab", "c"]); out
        [9, 2, 1]
        """
        if table is None:
            reduce(iconcat, map(self.__getitem__, pretokens), out)
        else:
            encode_words(pretokens, self, table, self._compute, self._maxkey, self._maxsize, out)

    def __missing__(self, key: str) -> tuple[int, ...]:
        value = self._compute(key)
        if len(key) <= self._maxkey:
            if len(self) >= self._maxsize:
                self.clear()
            self[key] = value
        return value


class TextEncoder:
    """Text to IDs for one tokenizer: ``pattern`` cuts pre-tokens, ``specials`` (string ->
    ID) are the special tokens matched in the text, ``bpe`` gives one pre-token's IDs, and
    its results are kept in :attr:`cache` (``cache_size`` entries; 0 disables it).
    """

    def __init__(
        self,
        *,
        pattern: str,
        specials: Mapping[str, int],
        bpe: Compute,
        cache_size: int,
        fast_table: FastTable | None = None,
    ) -> None:
        self._regex = compile_pattern(pattern)  # raises a clear error for a broken regex
        self._ascii_regex = ascii_pattern(pattern)
        self._pattern = pattern
        self._split = splitter(pattern)  # a built-in pattern's cut in C, or None
        # the safe-cut rule (core.engine.pretokenize.last_cut) is proven for the built-in patterns only
        self._cuttable = resolve_pattern(pattern) in PATTERNS.values()
        self._special_ids = dict(specials)
        self._special_re = special_splitter(tuple(self._special_ids))
        # the characters special tokens start with: a text with none holds no special token,
        # and `in` finds that faster than the splitter's search (Llama 4 has 2,048 specials)
        self._special_firsts = tuple({s[0] for s in self._special_ids if s})
        self._max_special = max(map(len, self._special_ids), default=0)
        self._bpe = bpe
        self._fast_table = fast_table  # () -> the C twin's table of `bpe`, or None
        #: pre-token -> IDs, shared by every encode of the tokenizer
        self.cache = PretokenCache(bpe, cache_size, _MAX_PRETOKEN_KEY)

    def __getstate__(self) -> dict[str, Any]:
        # the C cut holds its tables' buffers: a pickled encoder (sent to a worker process)
        # makes its own where it lands
        return {**self.__dict__, "_split": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._split = splitter(self._pattern)

    def findall(self, text: str) -> list[str]:
        """Pre-tokens of ordinary text: a built-in pattern's cut in C where it was built
        (:mod:`core.engine.pretoken_split`: 10x `regex` on mixed scripts, 2.5x `re` on
        ASCII). Else ASCII stretches go through an equivalent `re` pattern, several times
        faster than `regex` (tests check they agree); only the stretches around non-ASCII
        characters, cut at safe places, need `regex`."""
        split = self._split
        if split is not None:
            return split(text)
        fast = self._ascii_regex
        if fast is None:
            return self._regex.findall(text)
        if text.isascii():
            return fast.findall(text)
        # Text dense in non-ASCII (over 1% extra UTF-8 bytes: any non-Latin script, a short
        # accented sentence): the regions would cover most of it at a Python call per run of
        # non-ASCII, so `regex` alone is faster (5-7x on a short sentence, 30% on docs-multi).
        if len(text.encode("utf-8", "surrogatepass")) - len(text) > len(text) // 100:
            return self._regex.findall(text)
        out: list[str] = []
        pos = 0
        for start, end in mixed_regions(text):
            if start > pos:
                out += fast.findall(text[pos:start])
            out += self._regex.findall(text[start:end])
            pos = end
        if pos < len(text):
            out += fast.findall(text[pos:])
        return out

    def _encode_piece(self, text: str, cache: PretokenCache, out: list[int]) -> None:
        """Append the IDs of ordinary text (no special tokens in it) to ``out``."""
        start = 0
        # Long text: encode it in ~64k-char segments cut where no pre-token can straddle,
        # so the temporary list of pre-tokens stays small.
        while self._cuttable and len(text) - start > _MAX_SEGMENT:
            cut = last_cut(text, start + _MAX_SEGMENT, lo=start + 1)
            if cut <= start:
                break  # no safe cut: the rest goes in one piece
            self._encode_segment(text[start:cut], cache, out)
            start = cut
        self._encode_segment(text[start:] if start else text, cache, out)

    def _encode_segment(self, text: str, cache: PretokenCache, out: list[int]) -> None:
        # The hot path: one findall, then pre-token -> IDs look-ups in C; cache misses run
        # BPE, in C too where tokplay_native was built (PretokenCache.extend).
        cache.extend(out, self.findall(text), None if self._fast_table is None else self._fast_table())

    def _encode(self, text: str, cache: PretokenCache) -> list[int]:
        out: list[int] = []
        if self._special_re is None or not any(map(text.__contains__, self._special_firsts)):
            if len(text) <= _MAX_SEGMENT:  # (the usual case: _encode_segment, one call less)
                table = None if self._fast_table is None else self._fast_table()
                cache.extend(out, self.findall(text), table)
            else:
                self._encode_piece(text, cache, out)
            return out
        ids = self._special_ids
        pos = 0
        for m in self._special_re.finditer(text):
            if m.start() > pos:
                self._encode_piece(text[pos : m.start()], cache, out)
            out.append(ids[m.group()])
            pos = m.end()
        if pos < len(text):
            self._encode_piece(text[pos:], cache, out)
        return out

    def encode(self, text: str) -> list[int]:
        """IDs of ``text``, special tokens included, through the shared cache."""
        if len(text) < BULK_TEXT:
            return self._encode(text, self.cache)
        with gc_paused():  # (see BULK_TEXT)
            return self._encode(text, self.cache)

    def encode_ordinary(self, text: str) -> list[int]:
        """IDs of ``text`` with special tokens read as plain text."""
        out: list[int] = []
        self._encode_piece(text, self.cache, out)
        return out

    def stream(
        self, iterable: Iterable[str], *, cache_size: int = STREAM_CACHE_SIZE
    ) -> Iterator[int]:
        """Lazily yield the IDs of the concatenated strings (e.g. the lines of an open file).

        Memory stays bounded: text is gathered until a safe cut is found (a place no
        pre-token and no special token can straddle, whatever follows), encoded up to it,
        and dropped. The IDs are exactly those of ``encode("".join(iterable))``.

        Pre-token results go to a cache of ``cache_size`` entries private to this stream (a
        few MB), in front of the shared :attr:`cache`, which the stream reads but never
        grows: a file of any size costs a few MB while it streams, and nothing after.
        """
        # (not a generator itself, so that a bad cache_size fails here, not at the first next())
        return self._stream(iterable, self._stream_cache(cache_size))

    def _stream(self, iterable: Iterable[str], cache: PretokenCache) -> Iterator[int]:
        if isinstance(iterable, str):
            # A str is an iterable of characters: correct, but encode it in one go.
            yield from self._encode(iterable, cache)
            return
        parts: list[str] = []
        size = 0
        threshold = _STREAM_BUFFER
        for index, chunk in enumerate(iterable):
            if not isinstance(chunk, str):
                raise PlaygroundError(
                    f"encode_iterable got {type(chunk).__name__} at item {index}; it takes "
                    "strings (open text files with encoding='utf-8', not 'rb')."
                )
            parts.append(chunk)
            size += len(chunk)
            if size < threshold:
                continue
            buf = "".join(parts)
            cut = self._safe_cut(buf)
            if cut > 0:
                yield from self._encode(buf[:cut], cache)
                buf = buf[cut:]
            parts = [buf]
            size = len(buf)
            # subtle: grow the threshold when no cut was found, so a long uncuttable run
            # costs O(n log n) joins instead of O(n^2).
            threshold = max(_STREAM_BUFFER, 2 * size)
        yield from self._encode("".join(parts), cache)

    def _stream_cache(self, size: int) -> PretokenCache:
        """A small cache for one stream: a miss looks in the shared cache (``dict.get``
        never computes or inserts) before running BPE."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise PlaygroundError(
                f"cache_size must be a whole number of entries >= 0, not {size!r}"
            )
        shared_get = self.cache.get
        bpe = self._bpe

        def compute(pretoken: str) -> tuple[int, ...]:
            ids = shared_get(pretoken)
            return bpe(pretoken) if ids is None else ids

        return PretokenCache(compute, size, _MAX_PRETOKEN_KEY)

    def _safe_cut(self, buf: str) -> int:
        """The largest position ``c > 0`` such that ``encode(buf[:c] + rest) ==
        encode(buf[:c]) + encode(rest)`` for any continuation; 0 if none is known."""
        if not self._cuttable:
            return 0  # a user's regex: no cut is known to be safe, so the stream buffers
        return cut_outside_specials(
            buf, len(buf), specials=self._special_re, longest_special=self._max_special
        )


def check_text(text: object) -> None:
    """Refuse what is not a str, saying how to get one."""
    if not isinstance(text, str):
        hint = " (decode bytes with .decode('utf-8') first)" if isinstance(text, bytes) else ""
        raise PlaygroundError(f"encode takes a str, not {type(text).__name__}{hint}")
