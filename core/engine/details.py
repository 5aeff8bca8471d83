"""What the Tokenize, Decode and Vocabulary pages draw: computed here, not in pages.

- :func:`encode_details`: each token's ID, bytes and character span, whether it holds only
  part of a UTF-8 character, which tokens together make one character, pre-token spans;
- :func:`merge_trace`: the merges BPE applies inside one pre-token ("why this split");
- :func:`decode_details`: each ID's bytes and text, and which U+FFFD in the output came
  from which IDs;
- :func:`merge_tree`: how a token is built from single bytes;
- :func:`parse_ids`: token IDs typed or pasted as text.

>>> from core.engine.tokenizer import Tokenizer
>>> tok = Tokenizer({i: bytes([i]) for i in range(256)} | {256: b"\\xe4\\xb8"}, [(b"\\xe4", b"\\xb8")])
>>> [(t.token, t.start, t.end, t.partial, t.group) for t in encode_details(tok, "中a").tokens]
[(b'\\xe4\\xb8', 0, 1, True, 0), (b'\\xad', 0, 1, True, 0), (b'a', 1, 2, False, 1)]
>>> decode_details(tok, [256, 97]).replacements     # "\\xe4\\xb8" alone is an unfinished char
[(0, [0])]
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from core.engine.basics import check_id, utf8
from core.engine.pretokenize import split_on_specials
from core.errors import PlaygroundError

if TYPE_CHECKING:
    from core.engine.regex_compat import HeldPattern
    from core.engine.template import Template

__all__ = [
    "BPETables",
    "DecodeDetails",
    "DecodedPiece",
    "EncodingDetails",
    "IdProblem",
    "MAX_PARSED_IDS",
    "MergeNode",
    "MergeStep",
    "TokenSpan",
    "decode_details",
    "decode_replacements",
    "encode_details",
    "merge_trace",
    "merge_tree",
    "parse_ids",
]

#: parse_ids reads at most this many IDs (a pasted megabyte of numbers would stall a page).
MAX_PARSED_IDS = 100_000

# ----------------------------------------------------------------------------------------
# What the functions read from a tokenizer
# ----------------------------------------------------------------------------------------


class BPETables(Protocol):
    """The read-only tables of a byte-level BPE tokenizer that these functions read;
    :class:`core.engine.tokenizer.Tokenizer` has them all. A protocol, not that class: core.engine.tokenizer
    imports this module, so naming the class here (even under ``TYPE_CHECKING``) would close
    an import circle."""

    @property
    def vocab(self) -> Mapping[int, bytes]: ...
    @property
    def special_tokens(self) -> Sequence[str]: ...
    @property
    def special_token_ids(self) -> Mapping[str, int]: ...
    @property
    def specials_in_text(self) -> bool: ...
    @property
    def template(self) -> Template: ...
    @property
    def pretoken_regex(self) -> HeldPattern: ...
    @property
    def byte_ids(self) -> Sequence[int]: ...
    @property
    def n_vocab(self) -> int: ...
    def pretoken_ids(self, pretoken: str) -> Iterable[int]: ...
    def pair_merge(self, left: int, right: int) -> tuple[int, int] | None: ...
    def parts_of(self, token_id: int) -> tuple[int, int, int] | None: ...


# ----------------------------------------------------------------------------------------
# Data classes
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenSpan:
    """One token of an encoding.

    ``start``/``end``: the characters of the input it touches (a token holding part of a
    character spans that whole character). ``text``: its bytes decoded with
    ``errors="replace"``. ``partial``: it starts or ends inside a UTF-8 character. ``group``:
    tokens with the same group together make whole characters. ``pretoken``: index into
    :attr:`EncodingDetails.pretokens`.
    """

    index: int
    id: int
    token: bytes
    start: int
    end: int
    text: str
    is_special: bool
    partial: bool
    group: int
    pretoken: int
    #: the token as its file spells it (``▁the``, ``<0x0A>``, ``##ing``), for tokenizers
    #: that are not byte-level BPE; "" otherwise
    piece: str = ""


@dataclass(frozen=True)
class EncodingDetails:
    """``pretokens``: character spans of the pre-tokens (special tokens included, each as
    its own span), in order."""

    text: str
    tokens: list[TokenSpan]
    pretokens: list[tuple[int, int]]
    n_chars: int
    n_bytes: int
    n_tokens: int


@dataclass(frozen=True)
class MergeStep:
    """One BPE merge inside a pre-token: ``pair`` became ``merged`` (at every place it
    occurred, left to right); ``before``/``after``: the parts around the merge."""

    rank: int
    pair: tuple[bytes, bytes]
    merged: bytes
    before: list[bytes]
    after: list[bytes]


@dataclass(frozen=True)
class DecodedPiece:
    """One ID of a decode. ``token`` is ``None`` (and ``hex`` empty) for an ID outside the
    vocab; ``text`` is the token alone decoded with ``errors="replace"``."""

    index: int
    id: int
    token: bytes | None
    hex: str
    text: str
    out_of_vocab: bool


@dataclass(frozen=True)
class DecodeDetails:
    """``replacements``: for each U+FFFD that decoding *made* (not one that was in the
    text), its character index in ``text`` and the indices of the pieces whose bytes it
    replaced."""

    text: str
    pieces: list[DecodedPiece]
    replacements: list[tuple[int, list[int]]]


@dataclass(frozen=True)
class MergeNode:
    """A token and the two tokens it was merged from (``None`` for single bytes and special
    tokens); ``rank``: the merge that made it; ``special``: a special token (made by no
    merge, matched whole)."""

    id: int
    token: bytes
    rank: int | None
    left: MergeNode | None
    right: MergeNode | None
    special: bool = False


@dataclass(frozen=True)
class IdProblem:
    """An item of typed IDs that could not be read; ``position`` counts items from 1."""

    position: int
    item: str
    message: str


# ----------------------------------------------------------------------------------------
# Encoding details
# ----------------------------------------------------------------------------------------


def _char_byte_offsets(text: str) -> list[int]:
    """Byte offset of each character's start in UTF-8, plus the total at the end.

    >>> _char_byte_offsets("a中")
    [0, 1, 4]
    """
    offsets = [0]
    total = 0
    for ch in text:
        cp = ord(ch)
        total += 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
        offsets.append(total)
    return offsets


def encode_details(
    tokenizer: BPETables,
    text: str,
    *,
    add_special_tokens: bool = False,
    pretoken_ids: Callable[[str], Iterable[int]] | None = None,
) -> EncodingDetails:
    """Everything the Tokenize page shows about ``tokenizer.encode(text)``.

    The IDs are exactly ``tokenizer.encode(text, add_special_tokens=...)``: the template's
    tokens (a model's BOS) come first and last, as special tokens with empty spans. Lone
    surrogates (which UTF-8 cannot hold) are encoded as U+FFFD, as in :meth:`Tokenizer.encode`.
    ``pretoken_ids``: the IDs of one pre-token, in place of ``tokenizer.pretoken_ids`` (the
    replay gives those of the first k merges, :mod:`core.explain.replay`).
    """
    if not isinstance(text, str):
        raise PlaygroundError(f"encode_details takes a str, not {type(text).__name__}")
    tokens: list[TokenSpan] = []
    pretokens: list[tuple[int, int]] = []
    group = -1
    n_bytes = 0

    def add_pretoken(piece: str, start: int, ids: Iterable[int], special: bool) -> None:
        nonlocal group, n_bytes
        k = len(pretokens)
        pretokens.append((start, start + len(piece)))
        offsets = _char_byte_offsets(piece)
        boundaries = set(offsets)
        pos = 0
        for tid in ids:
            token = tokenizer.vocab[tid]
            end_byte = pos + len(token)
            if special or pos in boundaries:
                group += 1
            # characters touched: from the one holding the first byte to the one holding
            # the last byte (min() guards pieces whose UTF-8 differs, i.e. surrogates).
            first = min(bisect_right(offsets, pos) - 1, len(piece) - 1)
            last = min(bisect_right(offsets, end_byte - 1) - 1, len(piece) - 1)
            tokens.append(
                TokenSpan(
                    index=len(tokens),
                    id=tid,
                    token=token,
                    start=start + first,
                    end=start + last + 1,
                    text=token.decode("utf-8", "replace"),
                    is_special=special,
                    partial=not special and not (pos in boundaries and end_byte in boundaries),
                    group=group,
                    pretoken=k,
                )
            )
            pos = end_byte
        n_bytes += pos

    matched = tokenizer.special_tokens if tokenizer.specials_in_text else ()
    pieces = split_on_specials(text, matched)
    start = 0
    for piece, special in pieces:
        if special:
            add_pretoken(piece, start, [tokenizer.special_token_ids[piece]], True)
        else:
            for m in tokenizer.pretoken_regex.finditer(piece):
                ids = (pretoken_ids or tokenizer.pretoken_ids)(m.group())
                add_pretoken(m.group(), start + m.start(), ids, False)
        start += len(piece)
    if add_special_tokens:
        tokens = _with_template(tokenizer, tokens, len(text))
    return EncodingDetails(
        text=text,
        tokens=tokens,
        pretokens=pretokens,
        n_chars=len(text),
        n_bytes=n_bytes,
        n_tokens=len(tokens),
    )


def _with_template(tokenizer: BPETables, tokens: list[TokenSpan], end: int) -> list[TokenSpan]:
    """``tokens`` with the template's prefix and suffix IDs around them, renumbered."""

    def special(tid: int, at: int) -> TokenSpan:
        token = tokenizer.vocab[tid]
        return TokenSpan(0, tid, token, at, at, token.decode("utf-8", "replace"), True,
                         False, -1, -1)  # fmt: skip

    template = tokenizer.template
    whole = [special(t, 0) for t in template.prefix] + tokens
    whole += [special(t, end) for t in template.suffix]
    return [replace(t, index=i) for i, t in enumerate(whole)]


# ----------------------------------------------------------------------------------------
# Merge trace and merge tree
# ----------------------------------------------------------------------------------------


def merge_trace(tokenizer: BPETables, pretoken: str) -> list[MergeStep]:
    """The merges BPE applies to one pre-token, lowest rank first; the last ``after`` is the
    pre-token's tokens. A special token needs no merges: ``[]``. (With ``ignore_merges``, a
    pre-token that is a token is encoded as that token directly; for the presets BPE rebuilds
    every token from its bytes, so the trace still ends there.)

    >>> from core.engine.tokenizer import Tokenizer
    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab"}
    >>> tok = Tokenizer(vocab, [(b"b", b"c"), (b"a", b"b")])
    >>> [(s.rank, s.merged, s.after) for s in merge_trace(tok, "abcde")]
    [(0, b'bc', [b'a', b'bc', b'd', b'e'])]
    """
    if not isinstance(pretoken, str):
        raise PlaygroundError(f"merge_trace takes a str, not {type(pretoken).__name__}")
    if pretoken in tokenizer.special_token_ids:
        return []
    data = utf8(pretoken)
    vocab = tokenizer.vocab
    ids = [tokenizer.byte_ids[b] for b in data]
    steps: list[MergeStep] = []
    none = (1 << 62, -1)
    while len(ids) > 1:
        # the leftmost lowest-ranked pair, as Tokenizer.bpe picks it
        (rank, new_id), i = min(
            (tokenizer.pair_merge(ids[k], ids[k + 1]) or none, k) for k in range(len(ids) - 1)
        )
        if new_id < 0:
            break
        before = [vocab[t] for t in ids]
        a, b = ids[i], ids[i + 1]
        # every occurrence, left to right (later ones would be merged next anyway)
        out: list[int] = []
        k = 0
        while k < len(ids):
            if k + 1 < len(ids) and ids[k] == a and ids[k + 1] == b:
                out.append(new_id)
                k += 2
            else:
                out.append(ids[k])
                k += 1
        ids = out
        steps.append(
            MergeStep(
                rank=rank,
                pair=(vocab[a], vocab[b]),
                merged=vocab[new_id],
                before=before,
                after=[vocab[t] for t in ids],
            )
        )
    return steps


def merge_tree(tokenizer: BPETables, token_id: int) -> MergeNode:
    """How token ``token_id`` is built: a binary tree whose leaves are single bytes.

    >>> from core.engine.tokenizer import Tokenizer
    >>> vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"}
    >>> tree = merge_tree(Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")]), 257)
    >>> tree.rank, tree.left.token, tree.left.left.token, tree.right.token
    (1, b'ab', b'a', b'c')
    >>> merge_tree(Tokenizer(vocab | {258: b"<s>"}, [], ["<s>"]), 258).special
    True
    """
    if isinstance(token_id, bool) or not isinstance(token_id, int):
        raise PlaygroundError(f"merge_tree takes an integer token ID, not {token_id!r}")
    if token_id not in tokenizer.vocab:
        raise PlaygroundError(
            f"ID {token_id} is not in this vocabulary (IDs run from 0 to {tokenizer.n_vocab - 1})"
        )

    specials = set(tokenizer.special_token_ids.values())

    def build(tid: int) -> MergeNode:
        made = tokenizer.parts_of(tid)
        if made is None:
            return MergeNode(tid, tokenizer.vocab[tid], None, None, None, tid in specials)
        rank, left, right = made
        return MergeNode(tid, tokenizer.vocab[tid], rank, build(left), build(right))

    return build(token_id)


# ----------------------------------------------------------------------------------------
# Decoding details
# ----------------------------------------------------------------------------------------


def _utf8_step(data: bytes, i: int) -> tuple[int, bool]:
    """Length of the UTF-8 unit at ``data[i]`` and whether it is a valid character. An
    invalid unit is the *maximal subpart* that Python's decoder turns into one U+FFFD.

    >>> _utf8_step(b"\\xe4\\xb8\\xad", 0), _utf8_step(b"\\xe4\\xb8a", 0), _utf8_step(b"\\xff", 0)
    ((3, True), (2, False), (1, False))
    """
    b0 = data[i]
    if b0 < 0x80:
        return 1, True
    if 0xC2 <= b0 <= 0xDF:
        need, lo, hi = 1, 0x80, 0xBF
    elif b0 == 0xE0:
        need, lo, hi = 2, 0xA0, 0xBF
    elif 0xE1 <= b0 <= 0xEC or b0 in (0xEE, 0xEF):
        need, lo, hi = 2, 0x80, 0xBF
    elif b0 == 0xED:
        need, lo, hi = 2, 0x80, 0x9F  # no surrogates
    elif b0 == 0xF0:
        need, lo, hi = 3, 0x90, 0xBF
    elif 0xF1 <= b0 <= 0xF3:
        need, lo, hi = 3, 0x80, 0xBF
    elif b0 == 0xF4:
        need, lo, hi = 3, 0x80, 0x8F  # nothing above U+10FFFF
    else:
        return 1, False
    j = i + 1
    for _ in range(need):
        if j >= len(data) or not lo <= data[j] <= hi:
            return j - i, False
        lo, hi = 0x80, 0xBF
        j += 1
    return j - i, True


def decode_details(tokenizer: BPETables, ids: Iterable[int]) -> DecodeDetails:
    """Per-ID pieces and the origin of every U+FFFD in ``tokenizer.decode(ids)``.

    Replacements are found by walking the concatenated byte stream as the UTF-8 decoder
    does (not token by token): a character split across two tokens is fine, while an
    unfinished one is a U+FFFD blamed on every token it took bytes from. An ID outside the
    vocab is its own U+FFFD.
    """
    if isinstance(ids, (str, bytes)):
        raise PlaygroundError("decode_details takes a list of token IDs; use parse_ids() for text")
    pieces: list[DecodedPiece] = []
    stream: list[bytes] = []
    for index, item in enumerate(ids):
        tid = check_id(item, index)
        token = tokenizer.vocab.get(tid)
        if token is None:
            pieces.append(DecodedPiece(index, tid, None, "", "\ufffd", True))
            data = b"\xff"  # decodes to one U+FFFD of its own, as in Tokenizer.decode
        else:
            text = token.decode("utf-8", "replace")
            pieces.append(DecodedPiece(index, tid, token, token.hex(" "), text, False))
            data = token
        stream.append(data)
    text, replacements = _walk_utf8(stream)
    return DecodeDetails(text=text, pieces=pieces, replacements=replacements)


def _walk_utf8(
    stream: list[bytes], *, per_byte: bool = False
) -> tuple[str, list[tuple[int, list[int]]]]:
    """Decode the joined pieces as UTF-8 with replacement, and for each U+FFFD its position
    in the text and the indexes of the pieces its bytes came from. ``per_byte``: one U+FFFD
    per bad byte (SentencePiece's rule) instead of one per maximal bad subpart (Python's)."""
    owner = [k for k, piece in enumerate(stream) for _ in piece]
    data = b"".join(stream)
    chars: list[str] = []
    replacements: list[tuple[int, list[int]]] = []
    i = 0
    while i < len(data):
        n, valid = _utf8_step(data, i)
        if valid:
            chars.append(data[i : i + n].decode("utf-8"))
        elif per_byte:
            for k in range(i, i + n):
                replacements.append((len(chars), [owner[k]]))
                chars.append("\ufffd")
        else:
            replacements.append((len(chars), sorted(set(owner[i : i + n]))))
            chars.append("\ufffd")
        i += n
    return "".join(chars), replacements


def decode_replacements(
    stream: list[bytes], *, per_byte: bool = False
) -> list[tuple[int, list[int]]]:
    """Each U+FFFD that decoding the joined ``stream`` gives: its position in the text and
    the indexes of the pieces its bytes came from (``per_byte``: one per bad byte).

    >>> decode_replacements([b"a", b"\\xe4\\xb8", b"b"])
    [(1, [1])]
    >>> decode_replacements([b"a", b"\\xe4", b"\\xb8"], per_byte=True)
    [(1, [1]), (2, [2])]
    """
    return _walk_utf8(stream, per_byte=per_byte)[1]


# ----------------------------------------------------------------------------------------
# Reading typed IDs
# ----------------------------------------------------------------------------------------

_SEPARATORS = re.compile(r"[\s,;]+")
_INTEGER = re.compile(r"[+-]?[0-9]+")


def parse_ids(text: str, *, max_ids: int = MAX_PARSED_IDS) -> tuple[list[int], list[IdProblem]]:
    """Token IDs from text: separated by spaces, commas or newlines, or a JSON list.

    Items that are not IDs are reported (positions count from 1) and skipped.

    >>> parse_ids("15496, 11 995")
    ([15496, 11, 995], [])
    >>> ids, problems = parse_ids("[1, 2, \\"abc\\", -4]")
    >>> ids, [p.message for p in problems]
    ([1, 2], ["item 3 'abc' is not an integer", "item 4 '-4' is negative; token IDs are 0 or more"])
    """
    if not isinstance(text, str):
        raise PlaygroundError(f"parse_ids takes a str, not {type(text).__name__}")
    body = text.strip()
    items: list[str]
    if body.startswith("["):
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            items = [
                str(x).lower() if isinstance(x, bool) else x if isinstance(x, str) else json.dumps(x)
                for x in parsed
            ]
        else:  # "[1 2 3" or similar: read it as plain separated items
            items = [s for s in _SEPARATORS.split(body.strip("[]")) if s]
    else:
        items = [s for s in _SEPARATORS.split(body) if s]
    ids: list[int] = []
    problems: list[IdProblem] = []
    for position, item in enumerate(items, start=1):
        if len(ids) >= max_ids:
            problems.append(
                IdProblem(
                    position, "",
                    f"only the first {max_ids:,} IDs are read; the text has {len(items):,} "
                    "items. Decode it in smaller parts.",
                )  # fmt: skip
            )
            break
        shown = item if len(item) <= 30 else item[:27] + "..."
        if not _INTEGER.fullmatch(item):
            problems.append(IdProblem(position, item, f"item {position} {shown!r} is not an integer"))
        elif item.startswith("-") and item.strip("-0"):
            problems.append(
                IdProblem(
                    position, item, f"item {position} {shown!r} is negative; token IDs are 0 or more"
                )
            )
        elif len(item.lstrip("+-0")) > 18:
            problems.append(
                IdProblem(position, item, f"item {position} {shown!r} is too large to be a token ID")
            )
        else:
            ids.append(int(item))
    return ids, problems
