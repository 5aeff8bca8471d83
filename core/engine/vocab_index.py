"""The byte-level Tokenizer's look-up tables, built a whole list at a time: the vocab
checked, bytes -> ID, and the merges as IDs.

Loading a big model (Llama 3: 128k tokens, 280k merges) spends most of its time here, so
each builder checks the usual case with a few C-level passes (``map``, ``set``, ``zip``)
and falls back to a plain loop only to find and name a problem, or for a rare shape (a
token listed twice).

>>> vocab = checked_vocab({0: b"a", 1: b"b", 2: b"ab"})
>>> index_merges([(b"a", b"b")], lowest_ids(vocab, ()))
({(0, 1): 0}, (2,), ((0, 1),))

A file whose merges name tokens by ID (a ``tokenizer.json`` read in bulk, a GGUF, the table
cache) skips the bytes round trip: :func:`index_id_merges` indexes the ID pairs as they are.
Building these tables allocates millions of small objects, which would set off Python's
cyclic garbage collector again and again for nothing (none of them is in a cycle):
:func:`core.engine.basics.gc_paused` holds it off meanwhile.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from core import native
from core.errors import PlaygroundError

__all__ = [
    "check_dense",
    "checked_vocab",
    "copied_merges",
    "decode_tables",
    "IdColumns",
    "id_merge_pairs",
    "index_id_merges",
    "index_merges",
    "lowest_ids",
    "merge_id_triples",
    "merges_of_ids",
    "packed_merge_ids",
    "pair_ranks",
    "place_specials",
    "reads_packed",
    "single_byte_ids",
    "without_specials",
]

PairRanks = dict[tuple[int, int], int]
IdPairs = tuple[tuple[int, int], ...]
#: What the merge tables are indexed into: pair -> rank, each rank's merged ID and its pair.
IdMerges = tuple[PairRanks, tuple[int, ...], IdPairs]


def copied_merges(merges: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Our own copy of ``merges``, every part ``bytes`` (a bytearray is copied).

    >>> copied_merges([(bytearray(b"a"), b"b")])
    [(b'a', b'b')]
    """
    if set(map(len, merges)) <= {2} and set(
        map(type, itertools.chain.from_iterable(merges))
    ) <= {bytes}:
        return list(map(tuple, merges))  # type: ignore[arg-type]
    return [(bytes(a), bytes(b)) for a, b in merges]


def place_specials(
    vocab: dict[int, bytes], special_tokens: Iterable[str] | Mapping[str, int] | None,
    by_bytes: Mapping[bytes, int],
) -> tuple[list[str], dict[str, int]]:
    """The special tokens and their IDs, each added to ``vocab`` (in place) where it is not
    there yet: one given as ``{text: ID}`` takes that ID (which must be free or hold the
    same bytes), else the lowest ID whose bytes it is (``by_bytes``), else the next free ID.

    >>> vocab = {0: b"a", 1: b"<s>"}
    >>> place_specials(vocab, ["<s>", "</s>"], {b"a": 0, b"<s>": 1}), vocab[2]
    ((['<s>', '</s>'], {'<s>': 1, '</s>': 2}), b'</s>')
    """
    specials: list[str] = []
    ids: dict[str, int] = {}
    next_id = max(vocab, default=-1) + 1
    given = dict(special_tokens) if isinstance(special_tokens, Mapping) else {}
    for special in special_tokens or ():
        if not isinstance(special, str) or not special:
            raise PlaygroundError(
                f"special token {special!r} must be a non-empty string such as '<|endoftext|>'"
            )
        if special in ids:
            continue
        token = special.encode("utf-8")
        sid = given.get(special)
        if sid is not None:
            # a model's own numbering (Llama 3: 128000 and up); the ID must be free
            if sid in vocab and vocab[sid] != token:
                raise PlaygroundError(
                    f"special token {special!r} is given ID {sid}, which already holds "
                    f"{vocab[sid]!r}; give it a free ID"
                )
            vocab[sid] = token
            next_id = max(next_id, sid + 1)
        else:
            sid = by_bytes.get(token)
        if sid is None:
            sid = next_id
            next_id += 1
            vocab[sid] = token
        specials.append(special)
        ids[special] = sid
    return specials, ids


def without_specials(
    by_bytes: dict[bytes, int], vocab: Mapping[int, bytes], specials: Iterable[int], *,
    repeats: bool,
) -> dict[bytes, int]:
    """``lowest_ids(vocab, specials)`` from ``by_bytes = lowest_ids(vocab_before, ())``, where
    ``vocab`` is ``vocab_before`` plus the special tokens: when no bytes repeat in
    ``vocab_before`` (``repeats=False``), each special token's own entry is dropped from a
    copy, instead of indexing the whole vocab again.

    >>> without_specials({b"a": 0, b"<s>": 1}, {0: b"a", 1: b"<s>", 2: b"a"}, {1, 2}, repeats=False)
    {b'a': 0}
    """
    if repeats:
        return lowest_ids(dict(vocab), specials)
    out = dict(by_bytes)
    for special_id in specials:
        token = vocab[special_id]
        if out.get(token) == special_id:  # (a special given a free ID may repeat an ordinary token)
            del out[token]
    return out


def lowest_ids(vocab: dict[int, bytes], skip: Iterable[int]) -> dict[bytes, int]:
    """bytes -> ID over ``vocab`` without the IDs in ``skip``, in ID order; if bytes repeat,
    the lowest ID wins.

    >>> lowest_ids({3: b"a", 1: b"a", 2: b"b"}, {2})
    {b'a': 1}
    """
    skip = set(skip)
    # in ID order, as the loop below fills it (callers may iterate it)
    ids = sorted(i for i in vocab if i not in skip) if skip else sorted(vocab)
    tokens = list(map(vocab.__getitem__, ids))
    if len(set(tokens)) == len(tokens):  # the usual case: no repeats
        return dict(zip(tokens, ids))
    out: dict[bytes, int] = {}
    for i in ids:
        out.setdefault(vocab[i], i)
    return out


def index_merges(
    merges: Sequence[tuple[bytes, bytes]], encoder: Mapping[bytes, int]
) -> tuple[dict[tuple[int, int], int], tuple[int, ...], tuple[tuple[int, int], ...]]:
    """``(left ID, right ID) -> rank`` (the first rank of a pair listed twice), each rank's
    merged ID, and each rank's pair; a merge whose part or result is not in ``encoder`` is a
    :class:`PlaygroundError` naming it.

    >>> index_merges([(b"a", b"b")], {b"a": 0, b"b": 1})
    Traceback (most recent call last):
    ...
    core.errors.PlaygroundError: merge 0 (b'a', b'b') uses b'ab', which is not in the \
vocabulary; every merge's parts and result must be tokens.
    """
    # a whole list at a time (a 280k-merge file in a fraction of the loop's time); a
    # missing token sends us the loop below, which names it
    parts = list(itertools.chain.from_iterable(merges))
    lefts = list(map(encoder.get, parts[::2]))
    rights = list(map(encoder.get, parts[1::2]))
    made = list(map(encoder.get, map(bytes.__add__, parts[::2], parts[1::2])))
    if None not in lefts and None not in rights and None not in made:
        pairs = list(zip(lefts, rights))
        # the first rank of a pair listed twice wins: fill the map from the last rank
        ranks = dict(zip(reversed(pairs), range(len(pairs) - 1, -1, -1)))
        return ranks, tuple(made), tuple(pairs)  # type: ignore[arg-type, return-value]
    pair_ranks: dict[tuple[int, int], int] = {}
    merged: list[int] = []
    id_pairs: list[tuple[int, int]] = []
    for rank, (a, b) in enumerate(merges):
        ia, ib, im = encoder.get(a), encoder.get(b), encoder.get(a + b)
        if ia is None or ib is None or im is None:
            what = a if ia is None else b if ib is None else a + b
            raise PlaygroundError(
                f"merge {rank} ({a!r}, {b!r}) uses {what!r}, which is not in the "
                "vocabulary; every merge's parts and result must be tokens."
            )
        pair_ranks.setdefault((ia, ib), rank)
        merged.append(im)
        id_pairs.append((ia, ib))
    return pair_ranks, tuple(merged), tuple(id_pairs)


class IdColumns(NamedTuple):
    """Merges by ID as two columns, as a reader that checks them a whole list at a time has
    them: merge ``k`` joins ``lefts[k]`` and ``rights[k]`` (no tuple per merge to build)."""

    lefts: list[int]
    rights: list[int]


def merge_ids(merges: object, by_key: object) -> IdColumns | None:
    """Each merge's two parts as their IDs in ``by_key``, in C where it was built
    (``tokplay_native.tables.merge_ids``: merges all ``"left right"`` strings with one space,
    or all ``[left, right]`` lists). ``None`` when it was not built or a merge does not fit:
    then the caller's own pass decides, with its messages.

    >>> split = merge_ids(["a b", "ab c"], {"a": 0, "b": 1, "c": 2, "ab": 3})
    >>> split is None or split == IdColumns([0, 3], [1, 2])
    True
    """
    fast = native.tables
    if fast is None or type(merges) is not list or type(by_key) is not dict:
        return None
    split = fast.merge_ids(merges, by_key)
    return None if split is None else IdColumns(*split)


def merge_id_triples(
    merges: object, by_key: object
) -> tuple[list[int], list[int], list[int]] | None:
    """:func:`merge_ids` with each merge's join too (``left + right``'s ID in ``by_key``):
    ``(lefts, rights, made)``, in C where it was built; ``None`` when it was not or a merge
    (or its join) does not fit: the caller's own pass decides.

    >>> found = merge_id_triples(["a b"], {"a": 0, "b": 1, "ab": 2})
    >>> found is None or found == ([0], [1], [2])
    True
    """
    fast = native.tables
    if fast is None or type(merges) is not list or type(by_key) is not dict:
        return None
    return fast.merge_ids(merges, by_key, True)


def reads_packed() -> bool:
    """Whether :func:`packed_merge_ids` reads packed string columns (in C, where
    ``tokplay_native.tables`` was built; read at each call: a test turns it off)."""
    return native.tables is not None


def packed_merge_ids(
    tokens: tuple[bytes, bytes], merges: tuple[bytes, bytes], ids: list[int]
) -> tuple[list[int], list[int], list[int]] | None:
    """llama.cpp's merges (``"left right"``, cut at the first space after the first
    character) as ``(lefts, rights, made)`` IDs (the items of ``ids``), from packed columns
    (each ``(buf, spans)``: :class:`core.formats.gguf.GGUFStrings`); None when a token is
    empty or spelled twice or a merge names no token. Only where :func:`reads_packed`."""
    return native.tables.packed_merge_ids(  # type: ignore[union-attr]
        tokens[0], tokens[1], merges[0], merges[1], ids
    )


def pair_ranks(lefts: list[int], rights: list[int]) -> dict[tuple[int, int], int]:
    """``(left, right) -> rank``; a pair listed twice keeps its last rank, as Hugging Face's
    map does (one presized C pass where ``tokplay_native.tables`` is built).

    >>> pair_ranks([0, 1, 0], [1, 1, 1])
    {(0, 1): 2, (1, 1): 1}
    """
    fast = native.tables
    same = type(lefts) is list and type(rights) is list and len(lefts) == len(rights)
    if fast is not None and same:
        return fast.pair_ranks(lefts, rights)
    return dict(zip(zip(lefts, rights), range(len(lefts))))


def id_merge_pairs(
    merges: Sequence[Sequence[int]] | IdColumns,
) -> tuple[Sequence[int], Sequence[int]]:
    """The left and right IDs of merges given as :class:`IdColumns`, or as ``(left, right)``
    or ``(left, right, merged)`` ID tuples (all of one width); a :class:`PlaygroundError`
    for any other shape.

    >>> id_merge_pairs([(97, 98, 256), (256, 99, 257)])
    ([97, 256], [98, 99])
    """
    if isinstance(merges, IdColumns):
        lefts, rights = merges
        if len(lefts) == len(rights) and set(map(type, lefts)) | set(map(type, rights)) <= {int}:
            return lefts, rights
        merges = [()]  # (refused below)
    try:
        widths = set(map(len, merges)) or {2}
        if not set(map(type, merges)) <= {tuple, list}:  # (bytes would pass as a pair of ints)
            widths = set()
        flat = list(itertools.chain.from_iterable(merges))
    except TypeError:  # an item that is not a tuple
        widths, flat = set(), []
    if len(widths) != 1 or not widths <= {2, 3} or set(map(type, flat)) - {int}:
        raise PlaygroundError(
            "ID merges must be (left ID, right ID) or (left ID, right ID, merged ID) tuples of "
            "ints, all of one width"
        )
    width = widths.pop()
    return flat[::width], flat[1::width]


def index_id_merges(
    merges: Sequence[Sequence[int]] | IdColumns, vocab: Mapping[int, bytes],
    encoder: Mapping[bytes, int],
    *, specials: Collection[int] = (), table: Sequence[bytes | None] | None = None,
) -> tuple[list[tuple[bytes, bytes]] | None, PairRanks, tuple[int, ...], IdPairs]:
    """``index_merges(byte pairs, encoder)`` of merges given as ID tuples (:func:`id_merge_pairs`)
    with ``encoder = lowest_ids(vocab, specials)``, and the byte pairs if they were needed.

    The usual case needs none: when no bytes repeat, each ordinary token's bytes give back
    its own ID, so the pairs are indexed as they are and only the merged token is looked
    up (by the joined bytes, as for byte pairs). An ID that is no ordinary token, a join
    that is no token, or repeated bytes take the bytes path, which also names what is
    wrong. ``table``: ``vocab`` as a list by ID, padded with ``None`` to twice its length
    (the Tokenizer's decode table), to reuse.

    >>> vocab = {0: b"a", 1: b"b", 2: b"ab"}
    >>> index_id_merges([(0, 1, 2)], vocab, lowest_ids(vocab, ()))
    (None, {(0, 1): 0}, (2,), ((0, 1),))
    >>> index_id_merges([(0, 7)], vocab, lowest_ids(vocab, ()))
    Traceback (most recent call last):
    core.errors.PlaygroundError: merge 0 names token ID 7, which is not in the vocabulary
    """
    lefts, rights = id_merge_pairs(merges)
    if len(encoder) + len(specials) == len(vocab):  # no bytes repeat
        if table is None:
            table = list(map(vocab.get, range(max(vocab, default=-1) + 1)))
            table += [None] * len(table)
        by_id = list(table)  # (padded: a negative ID finds a None, as a gap does)
        for special_id in specials:
            by_id[special_id] = None
        # reuse the caller's (left, right) tuples as the keys when that is what they are
        pairs = merges if (
            lefts and not isinstance(merges, IdColumns) and set(map(type, merges)) == {tuple}
            and len(merges[0]) == 2) else None  # fmt: skip
        indexed = _index_ordinary_ids(lefts, rights, by_id, encoder, pairs)  # type: ignore[arg-type]
        if indexed is not None:
            return (None, *indexed)
    byte_merges = merges_of_ids(lefts, rights, vocab)
    return (byte_merges, *index_merges(byte_merges, encoder))


def _index_ordinary_ids(
    lefts: Sequence[int], rights: Sequence[int], by_id: Sequence[bytes | None],
    encoder: Mapping[bytes, int], pairs: Sequence[tuple[int, int]] | None,
) -> IdMerges | None:
    """:func:`index_id_merges`'s usual case, or ``None`` when an ID is not in ``by_id`` (a
    gap, a special token, past the end) or a join is not a token. In C where built
    (``tokplay_native.tables.index_pairs``), which leaves the unusual files to this code."""
    fast = native.tables
    if fast is not None and type(by_id) is list and type(encoder) is dict:
        indexed = fast.index_pairs(lefts, rights, by_id, encoder)
        if indexed is not None:
            return indexed
    try:
        made = list(map(encoder.get, map(operator.add, _pick(by_id, lefts), _pick(by_id, rights))))
    except (IndexError, TypeError):  # past the table, or a None
        return None
    if None in made:
        return None
    if pairs is None:
        pairs = list(zip(lefts, rights))
    n = len(pairs)
    ranks = dict(zip(pairs, range(n)))
    if len(ranks) != n:  # a pair listed twice: its first rank wins
        ranks = dict(zip(reversed(pairs), range(n - 1, -1, -1)))
    return ranks, tuple(made), tuple(pairs)  # type: ignore[arg-type]


def _pick(table: Sequence[bytes | None], ids: Sequence[int]) -> Sequence[bytes | None]:
    """``[table[i] for i in ids]``, in one C call (``itemgetter``) when there are several."""
    return operator.itemgetter(*ids)(table) if len(ids) > 1 else [table[i] for i in ids]


def merges_of_ids(
    lefts: Sequence[int], rights: Sequence[int], vocab: Mapping[int, bytes]
) -> list[tuple[bytes, bytes]]:
    """Merges given by ID as byte pairs; a :class:`PlaygroundError` names an ID that is not
    in ``vocab``.

    >>> merges_of_ids([0], [1], {0: b"a", 1: b"b"})
    [(b'a', b'b')]
    """
    get = vocab.get
    out = list(zip(map(get, lefts), map(get, rights)))
    for rank, pair in enumerate(out):
        if None in pair:
            bad = lefts[rank] if pair[0] is None else rights[rank]
            raise PlaygroundError(
                f"merge {rank} names token ID {bad}, which is not in the vocabulary"
            )
    return out  # type: ignore[return-value]


def single_byte_ids(encoder: Mapping[bytes, int]) -> tuple[int, ...]:
    """The ID of each byte 0..255, or a :class:`PlaygroundError` naming the missing ones.

    >>> single_byte_ids({bytes([b]): b for b in range(256)})[:3]
    (0, 1, 2)
    """
    missing = [b for b in range(256) if bytes([b]) not in encoder]
    if missing:
        shown = ", ".join(f"0x{b:02x}" for b in missing[:8])
        raise PlaygroundError(
            f"the vocabulary lacks single-byte tokens for {len(missing)} byte(s) ({shown}"
            f"{', ...' if len(missing) > 8 else ''}); a byte-level BPE vocabulary holds "
            "all 256 bytes so that any text can be encoded."
        )
    return tuple(encoder[bytes([b])] for b in range(256))


def decode_tables(vocab: Mapping[int, bytes]) -> tuple[list[bytes | None], list[bytes]]:
    """ID -> bytes as lists, the fastest look-up (call :func:`check_dense` first): ``None``
    in the gaps for ``decode_bytes()`` (an error), ``b"\\xff"`` for ``decode()`` (0xFF never
    occurs in UTF-8, so it decodes to one U+FFFD).

    subtle: each list is padded to twice its length so that a negative ID, which a list
    counts from the end, lands in the padding (an error / U+FFFD) rather than on a real
    token, as would an ID up to 2x past the end.

    >>> decode_tables({0: b"a", 2: b"c"})
    ([b'a', None, b'c', None, None, None], [b'a', b'\\xff', b'c', b'\\xff', b'\\xff', b'\\xff'])
    """
    table = list(map(vocab.get, range(max(vocab, default=-1) + 1)))
    filled = table if len(table) == len(vocab) else [b"\xff" if t is None else t for t in table]
    return table + [None] * len(table), filled + [b"\xff"] * len(table)  # type: ignore[return-value]


#: The largest token ID any vocab may use whatever its size: real ones stay under 300k (Gemma 3:
#: 262,144), and a replay keeps a preset's IDs for its first few tokens (GPT-2's 50,256 for 257).
MAX_SPARSE_ID = 2**22 - 1


def check_dense(vocab: Mapping[int, bytes]) -> None:
    """Refuse IDs far sparser than any real vocab: the tables are lists as long as the largest
    ID, so one stray ID of 10**12 in a file would ask for terabytes. An ID may go up to
    :data:`MAX_SPARSE_ID` (a few tens of MB of tables), or past it in a vocab dense enough.

    >>> check_dense({0: b"a", 50_256: b"b"})  # a replay of GPT-2's first merges
    >>> check_dense({0: b"a", 10**12: b"b"})
    Traceback (most recent call last):
    core.errors.PlaygroundError: the vocab's largest ID is 1,000,000,000,000 for 2 tokens; \
IDs must stay below 4,194,304 or run from 0 with few gaps
    """
    if vocab and (top := max(vocab)) > max(MAX_SPARSE_ID, 2 * len(vocab) + 1024):
        raise PlaygroundError(
            f"the vocab's largest ID is {top:,} for {len(vocab):,} tokens; IDs must stay below "
            f"{MAX_SPARSE_ID + 1:,} or run from 0 with few gaps"
        )


def checked_vocab(vocab: Mapping[int, bytes]) -> dict[int, bytes]:
    """A copy of ``vocab`` (IDs >= 0 -> non-empty bytes), or a :class:`PlaygroundError`
    naming the bad entry.

    >>> checked_vocab({0: bytearray(b"a")})
    {0: b'a'}
    """
    if not isinstance(vocab, Mapping):
        raise PlaygroundError(
            f"vocab must be a dict of token ID -> bytes, not {type(vocab).__name__}"
        )
    # the usual case, checked a whole list at a time
    if (
        vocab
        and set(map(type, vocab)) == {int}
        and set(map(type, vocab.values())) == {bytes}
        and min(vocab) >= 0
        and b"" not in vocab.values()
    ):
        check_dense(vocab)
        return dict(vocab)
    out: dict[int, bytes] = {}
    for i, token in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise PlaygroundError(f"vocab key {i!r} is not a token ID (an integer >= 0)")
        if not isinstance(token, (bytes, bytearray)) or not token:
            raise PlaygroundError(f"vocab[{i}] is {token!r}; every token must be non-empty bytes")
        out[i] = bytes(token)
    check_dense(out)
    return out

