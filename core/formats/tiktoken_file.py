"""tiktoken ``.tiktoken`` rank files, and recovering a merge list from ranks.

A rank file has one line per token: the token's bytes in base64, a space, its rank::

    IQ== 0          # b"!" has rank 0
    IiI= 1          # b'"' ...
    IHQ= 256        # b" t"

tiktoken keeps no merge list: the rank of a token *is* its merge priority. Our
:class:`~core.engine.tokenizer.Tokenizer` wants ``merges`` (the CS336 contract), so
:func:`ranks_to_merges` recovers them: a token's pair is what BPE makes of its bytes using
only the tokens ranked before it.

>>> ranks = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"abc": 4}
>>> ranks_to_merges(ranks)
[(b'a', b'b'), (b'ab', b'c')]
>>> load_tiktoken_ranks(dump_tiktoken_ranks(ranks)) == ranks
True
"""

from __future__ import annotations

import base64
import binascii
import itertools
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from core.engine.ranks import merges_from_ranks
from core.engine.tokenizer import Tokenizer
from core.errors import FormatError
from core.formats import table_cache
from core.formats.table_cache import Tables

__all__ = [
    "dump_tiktoken_ranks",
    "load_tiktoken_ranks",
    "ranks_to_merges",
    "tokenizer_from_tiktoken",
    "tokenizer_to_tiktoken",
]

# ----------------------------------------------------------------------------------------
# Reading and writing rank files
# ----------------------------------------------------------------------------------------


def load_tiktoken_ranks(data: bytes | str, *, name: str = "ranks.tiktoken") -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file into ``{token bytes: rank}``.

    Errors name the file and the 1-based line number:

    >>> load_tiktoken_ranks(b"YQ== 0\\nYg== zero\\n", name="x.tiktoken")
    Traceback (most recent call last):
    ...
    core.errors.FormatError: x.tiktoken, line 2: the rank 'zero' is not a whole number ...
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    key = table_cache.key_of(data)
    fast = table_cache.lookup(key, [RANKS])
    if fast is not None:
        return fast
    fast = _load_fast(data)
    if fast is not None:
        table_cache.keep(key, [RANKS], fast)  # opened again: the ranks without base64
        return fast
    # Something is wrong: read again line by line, to say where and what.
    ranks: dict[bytes, int] = {}
    seen_ranks: dict[int, int] = {}  # rank -> line number, to report duplicates
    for lineno, raw in enumerate(data.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        where = f"{name}, line {lineno}"
        parts = line.split()
        if len(parts) != 2:
            raise FormatError(
                f"{where}: expected 'BASE64TOKEN RANK' (two fields separated by a space), "
                f"found {len(parts)} field(s): {_show(raw)}. Is this really a .tiktoken file?"
            )
        token_b64, rank_text = parts
        try:
            token = base64.b64decode(token_b64, validate=True)
        except (binascii.Error, ValueError):
            raise FormatError(
                f"{where}: {_show(token_b64)} is not valid base64; each line must start with "
                "the token's bytes in base64."
            ) from None
        if not token:
            raise FormatError(f"{where}: the token is empty; every token needs at least one byte.")
        if not rank_text.isdigit() or len(rank_text) > 12:
            raise FormatError(
                f"{where}: the rank {_show(rank_text)} is not a whole number >= 0; "
                "each line must end with the token's rank."
            )
        rank = int(rank_text)
        if token in ranks:
            raise FormatError(
                f"{where}: token {token!r} appears twice (also with rank {ranks[token]}); "
                "each token may appear once."
            )
        if rank in seen_ranks:
            raise FormatError(
                f"{where}: rank {rank} is used twice (also on line {seen_ranks[rank]}); "
                "ranks must be unique."
            )
        ranks[token] = rank
        seen_ranks[rank] = lineno
    if not ranks:
        raise FormatError(f"{name}: the file has no tokens; a .tiktoken file lists one per line.")
    return ranks


def _load_fast(data: bytes) -> dict[bytes, int] | None:
    """The file read a whole list at a time (each step one C call over every line, no Python
    loop per line), or None when any line is off; the careful parse then finds the first
    bad line and says what is wrong.

    subtle: ``a2b_base64(strict_mode=True)`` accepts only what ``b64decode(validate=True)``
    accepts (and decodes it alike); where it is stricter, the careful parse decides.
    """
    try:
        # every line two fields or none (a blank line); then the fields, in order
        if not set(map(len, map(bytes.split, data.splitlines()))) <= {0, 2}:
            return None
        fields = data.split()
        rank_texts = fields[1::2]
        # ranks: whole numbers >= 0 of at most 12 digits (as the careful parse wants)
        if not rank_texts or not b"".join(rank_texts).isdigit() or max(map(len, rank_texts)) > 12:
            return None
        ranks = dict(zip(map(_strict_b64, fields[::2]), map(int, rank_texts)))
    except (ValueError, binascii.Error):
        return None
    # duplicates or empty tokens: let the careful parse name them
    if len(ranks) != len(rank_texts) or len(set(ranks.values())) != len(ranks) or b"" in ranks:
        return None
    return ranks


def _strict_decoder() -> Callable[[bytes], bytes]:
    """``a2b_base64(strict_mode=True)`` where there is one (Python 3.11+; in C, no regex per
    token), else ``b64decode(validate=True)``."""
    try:
        binascii.a2b_base64(b"", strict_mode=True)
    except TypeError:  # pragma: no cover (Python 3.10)
        return partial(base64.b64decode, validate=True)
    return partial(binascii.a2b_base64, strict_mode=True)


_strict_b64 = _strict_decoder()

def _ranks_tables(ranks: dict[bytes, int]) -> Tables:
    """A rank file's tables: rank -> token."""
    return Tables(dict(zip(ranks.values(), ranks.keys())), [], {})


def _ranks_from_tables(tables: Tables, **_: object) -> dict[bytes, int] | None:
    """The ranks of a rank file read before, or None. (The cache checks its files; the
    tokens are distinct bytes, the ranks distinct IDs, as a parse gives them.)"""
    if tables.merges:
        return None
    ranks = dict(zip(tables.vocab.values(), tables.vocab.keys()))
    return ranks if len(ranks) == len(tables.vocab) and b"" not in ranks else None


#: The :mod:`core.formats.table_cache` codec of rank files: the ranks without base64.
RANKS: table_cache.Codec[dict[bytes, int], dict[bytes, int]] = table_cache.Codec(
    "tiktoken-ranks", 1, to_tables=_ranks_tables, from_tables=_ranks_from_tables
)


def dump_tiktoken_ranks(ranks: Mapping[bytes, int]) -> bytes:
    """Write ``{token: rank}`` as a ``.tiktoken`` file, sorted by rank (tiktoken's layout).

    >>> dump_tiktoken_ranks({b"b": 1, b"a": 0})
    b'YQ== 0\\nYg== 1\\n'
    """
    return b"".join(
        base64.b64encode(token) + b" " + str(rank).encode("ascii") + b"\n"
        for token, rank in sorted(ranks.items(), key=lambda item: item[1])
    )


def _show(value: bytes | str, limit: int = 40) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return repr(text if len(text) <= limit else text[:limit] + "...")


# ----------------------------------------------------------------------------------------
# Ranks -> merges
# ----------------------------------------------------------------------------------------


def ranks_to_merges(ranks: Mapping[bytes, int], *, name: str = "ranks") -> list[tuple[bytes, bytes]]:
    """Recover the merge list (in rank order) from tiktoken-style ranks, or say why none
    reproduces them (some token is not built from two lower-ranked ones). Exporting to a
    format with merges needs this; loading a rank file does not (it encodes by rank).

    >>> ranks_to_merges({b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"abc": 4})
    [(b'b', b'c'), (b'a', b'bc')]
    """
    merges, whole_only = merges_from_ranks(ranks)
    if whole_only:
        token = whole_only[0]
        raise FormatError(
            f"{name}: {len(whole_only)} token(s), e.g. {token!r} (rank {ranks[token]}), cannot "
            "be built by merging two lower-ranked tokens, so no merge list reproduces these "
            "ranks; export them as a .tiktoken rank file instead."
        )
    return merges


# ----------------------------------------------------------------------------------------
# Tokenizer-level wrappers
# ----------------------------------------------------------------------------------------


def tokenizer_from_tiktoken(
    data: bytes | str | dict[bytes, int],
    special_tokens: Sequence[str] | Mapping[str, int] | None = None,
    *,
    pattern: str = "gpt2",
    name: str = "",
    file_name: str = "ranks.tiktoken",
    **options: Any,
) -> Tokenizer:
    """A :class:`~core.engine.tokenizer.Tokenizer` from a ``.tiktoken`` file (or its parsed ranks,
    :func:`load_tiktoken_ranks`): IDs are the ranks.

    The file stores neither the pre-tokenizer pattern nor special tokens, so pass them. Each
    special token takes the lowest free ID: the IDs below the smallest rank first (so a CS336
    export, whose specials sit at 0..k-1, reloads with the same IDs), then those after the
    largest rank; a mapping ``{special: ID}`` gives the model's own IDs instead.

    It encodes by rank, as tiktoken does, so the ranks may be in any order (Llama 3's are
    not in merge order).
    """
    ranks = data if isinstance(data, dict) else load_tiktoken_ranks(data, name=file_name)
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise FormatError(
            f"{file_name}: the single bytes {', '.join(f'0x{b:02x}' for b in missing[:8])}"
            f"{' ...' if len(missing) > 8 else ''} have no rank; a byte-level BPE rank file "
            "lists all 256 single bytes."
        )
    vocab = dict(zip(ranks.values(), ranks.keys()))
    if isinstance(special_tokens, Mapping):
        specials: list[str] | dict[str, int] = dict(special_tokens)
    else:
        specials = list(special_tokens or ())
        free = (i for i in itertools.count() if i not in vocab)
        for special in dict.fromkeys(specials):
            vocab[next(free)] = special.encode("utf-8")
    return Tokenizer(vocab, None, specials, pattern=pattern, name=name, **options)


def tokenizer_to_tiktoken(tokenizer: Tokenizer) -> bytes:
    """The ``.tiktoken`` file of a tokenizer: every non-special token with its ID as rank.

    tiktoken merges by rank, so this is faithful only when token IDs grow with merge order
    (true for CS336 vocabularies and for the presets); otherwise :class:`FormatError`.
    """
    specials = set(tokenizer.special_token_ids.values())
    ranks = {tok: i for i, tok in tokenizer.vocab.items() if i not in specials}
    if len(ranks) != len(tokenizer.vocab) - len(specials):
        raise FormatError(
            "this tokenizer has two IDs with the same bytes, which a .tiktoken file cannot "
            "express (each token has one rank)."
        )
    if tokenizer.by_rank:
        return dump_tiktoken_ranks(ranks)  # its IDs are ranks already
    last = -1
    for rank, (a, b) in enumerate(tokenizer.merges):
        merged = ranks.get(a + b)
        if merged is None or ranks.get(a, -1) >= merged or ranks.get(b, -1) >= merged:
            raise FormatError(
                f"merge {rank} ({a!r}, {b!r}): its token's ID is not larger than its parts' "
                "IDs, so tiktoken (which merges by ID) would not apply the merges in order."
            )
        if merged <= last:
            raise FormatError(
                f"merge {rank} ({a!r}, {b!r}) has a smaller ID than the merge before it; "
                "a .tiktoken file needs IDs that grow with merge order."
            )
        last = merged
    return dump_tiktoken_ranks(ranks)
