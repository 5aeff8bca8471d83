"""tokplay_native.bpe's RankTable look-ups: the two-byte pairs read from their own array
(``pair_rank``) and the one-byte tags read before the slots give the answers of the rank
file's dict, by core.engine.bpe.merge, on every kind of key: two-byte tokens with small ranks and
with ranks past 32 bits (looked up in the map), keys sharing a slot's tag, missing pairs."""

from __future__ import annotations

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import native
from core.engine.bpe import merge

fast = native.bpe
pytestmark = pytest.mark.skipif(fast is None, reason="tokplay_native is not built")

BYTES = [bytes([b]) for b in range(256)]


def _pure(encoder: dict[bytes, int], data: bytes) -> tuple[int, ...]:
    parts = merge([bytes([b]) for b in data], encoder, key=operator.add)
    return tuple(map(encoder.__getitem__, parts))


KEYS = st.binary(min_size=2, max_size=5)
TABLES = st.dictionaries(KEYS, st.sampled_from([300, 301, 2**31 - 2, 2**31 - 1, 2**31, 2**40]),
                         max_size=40)  # fmt: skip


@given(table=TABLES, data=st.binary(max_size=40))
@settings(max_examples=300, deadline=None)
def test_rank_table_is_the_pure_merge(table: dict[bytes, int], data: bytes) -> None:
    encoder = {b: i for i, b in enumerate(BYTES)}
    for rank, key in enumerate(table):  # (distinct ranks: a rank file's ranks are its IDs)
        encoder.setdefault(key, 256 + rank + table[key])
    for data_ in (data, data * 2, b"".join(table)[:200]):
        assert fast.RankTable(encoder).encode(data_) == _pure(encoder, data_)


def test_two_byte_tokens_past_32_bits_are_looked_up_in_the_map() -> None:
    encoder = {b: i for i, b in enumerate(BYTES)} | {b"ab": 2**40, b"bc": 2**31 - 1, b"abc": 2**41}
    table = fast.RankTable(encoder)
    for data in (b"ab", b"bc", b"abc", b"abcab", b"cab"):
        assert table.encode(data) == _pure(encoder, data)


def test_many_keys_sharing_tags_are_told_apart() -> None:
    # 60,000 three-byte tokens: the 8-bit tags repeat, the slots' keys decide
    encoder = {b: i for i, b in enumerate(BYTES)}
    pairs = [bytes([a, b]) for a in range(97, 123) for b in range(97, 123)]
    encoder.update({p: 256 + i for i, p in enumerate(pairs)})
    triples = [p + bytes([c]) for p in pairs for c in range(97, 123)]
    encoder.update({t: 1000 + i for i, t in enumerate(triples)})
    table = fast.RankTable(encoder)
    for data in (b"abcdefgh", b"zzzyxw", b"qwertyuiopasdfghjklzxcvbnm", b"a\xffb"):
        assert table.encode(data) == _pure(encoder, data)
