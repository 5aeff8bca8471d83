"""Safe loading of CS336 vocab/merges pickles: never executes code, clear errors, round trips."""

from __future__ import annotations

import builtins
import os
import pickle
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError, UnsafePickleError
from core.formats import (
    dumps_merges,
    dumps_vocab,
    load_pickles,
    loads_merges,
    loads_pickles,
    loads_vocab,
    safe_loads,
    save_pickles,
)

VOCAB = {0: b"<|endoftext|>", **{i + 1: bytes([i]) for i in range(256)}, 257: b" t", 258: b" th"}
MERGES = [(b" ", b"t"), (b" t", b"h")]


# ---------------------------------------------------------------------------------------------
# Malicious pickles never run
# ---------------------------------------------------------------------------------------------


class _System:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (os.system, (f"touch {self.marker}",))


class _Eval:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (builtins.eval, (f"open({str(self.marker)!r}, 'w').write('x')",))


class _Exec:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (builtins.exec, (f"open({str(self.marker)!r}, 'w').write('x')",))


class _Popen:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (subprocess.Popen, (["touch", str(self.marker)],))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_os_system_pickle_is_refused_and_runs_nothing(tmp_path: Path, protocol: int) -> None:
    marker = tmp_path / "pwned"
    data = pickle.dumps(_System(marker), protocol=protocol)
    with pytest.raises(UnsafePickleError) as info:
        loads_vocab(data, name="vocab.pkl")
    message = str(info.value)
    assert message.startswith("vocab.pkl: refused: the pickle asks for ")
    assert f"{os.system.__module__}.system" in message
    assert "only holds dicts, lists, tuples, ints and bytes" in message
    assert not marker.exists()


@pytest.mark.parametrize(
    ("cls", "expected"),
    [(_Eval, "builtins.eval"), (_Exec, "builtins.exec"), (_Popen, "subprocess.Popen")],
)
@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_other_callables_are_refused(tmp_path: Path, cls: type, expected: str, protocol: int) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(UnsafePickleError, match=expected.replace(".", r"\.")):
        loads_merges(pickle.dumps(cls(marker), protocol=protocol))
    assert not marker.exists()


def test_malicious_pickle_nested_inside_plain_data_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    data = pickle.dumps({0: b"a", 1: _System(marker)})
    with pytest.raises(UnsafePickleError, match="posix.system|nt.system"):
        loads_vocab(data)
    assert not marker.exists()


def test_restricted_unpickler_refuses_globals_even_without_the_scan(tmp_path: Path) -> None:
    from io import BytesIO

    from core.formats import RestrictedUnpickler

    marker = tmp_path / "pwned"
    with pytest.raises(UnsafePickleError, match="refused: the pickle asks for"):
        RestrictedUnpickler(BytesIO(pickle.dumps(_System(marker)))).load()
    assert not marker.exists()


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"\x80\x02])\x81.", "NEWOBJ"),  # builds an object of a class on the stack
        (b"\x80\x02c__builtin__\nset\n)\x81.", "builtins.set"),  # refused at the import
        (b"\x80\x02}q\x00}b.", "BUILD"),  # __setstate__ on a dict
        (b"\x80\x02\x82\x01.", "EXT1"),  # copyreg extension registry
        (b"Px\n.", "PERSID"),
        (b"\x80\x02X\x01\x00\x00\x00xQ.", "BINPERSID"),
        (b"\x80\x05\x97.", "NEXT_BUFFER"),
        (b"ccopyreg\n_reconstructor\n.", "copyreg._reconstructor"),
    ],
)
def test_other_dangerous_opcodes_are_refused(data: bytes, fragment: str) -> None:
    with pytest.raises(UnsafePickleError, match=fragment):
        safe_loads(data)


def test_memo_index_bomb_is_refused() -> None:
    # LONG_BINPUT 0xFFFFFFFF would make CPython allocate a 32 GiB memo table
    data = b"\x80\x02]r" + struct.pack("<I", 0xFFFFFFFF) + b"."
    with pytest.raises(UnsafePickleError, match="memory bomb"):
        safe_loads(data)


def test_size_limit() -> None:
    data = dumps_vocab(VOCAB)
    with pytest.raises(FormatError, match="over the 100-byte limit"):
        safe_loads(data, max_bytes=100)


def test_deeply_nested_lists_give_a_shape_error_not_a_crash() -> None:
    depth = 100_000
    data = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    with pytest.raises(FormatError, match=r"merges\.pkl: merge 0: expected a pair of bytes, got a list of 1 items"):
        loads_merges(data)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "the file is empty"),
        (b"not a pickle at all", "not a valid pickle"),
        (pickle.dumps(VOCAB)[:-20], "not a valid pickle"),
        (b'{"0": "a"}', "not a valid pickle"),
    ],
)
def test_garbage_is_a_format_error(data: bytes, fragment: str) -> None:
    with pytest.raises(FormatError, match=fragment) as info:
        loads_vocab(data, name="my_vocab.pkl")
    assert str(info.value).startswith("my_vocab.pkl: ")


# ---------------------------------------------------------------------------------------------
# Shape validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vocab", "message"),
    [
        ([b"a"], "vocab.pkl: expected a dict of token ID -> bytes, got a list of 1 items; is this the merges file?"),
        ({}, "vocab.pkl: the vocab is empty"),
        ({"0": b"a"}, "vocab.pkl: key '0' is not an integer token ID"),
        ({-1: b"a"}, "vocab.pkl: token ID -1 is negative"),
        ({0: "a"}, "vocab.pkl: ID 0 maps to 'a', not bytes (tokens are bytes"),
        ({0: b""}, "vocab.pkl: ID 0 maps to empty bytes"),
        ({0: b"a", 7: b"a"}, "vocab.pkl: IDs 0 and 7 both map to b'a'"),
        ({True: b"a"}, "vocab.pkl: key True is not an integer token ID"),
    ],
)
def test_bad_vocab_shapes(vocab: object, message: str) -> None:
    with pytest.raises(FormatError) as info:
        loads_vocab(pickle.dumps(vocab))
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("merges", "message"),
    [
        ({0: b"a"}, "merges.pkl: expected a list of (bytes, bytes) pairs, got a dict of 1 items; is this the vocab file?"),
        ([(b"a", b"b"), (b"a",)], "merges.pkl: merge 1: expected a pair of bytes, got a tuple of 1 items"),
        ([(b"a", "b")], "merges.pkl: merge 0: 'b' is not bytes"),
        ([(b"a", b"")], "merges.pkl: merge 0: a part is empty bytes"),
        ([(b"a", b"b"), (b"c", b"d"), (b"a", b"b")], "merges.pkl: merge 2 (b'a', b'b') repeats merge 0"),
        ([b"ab"], "merges.pkl: merge 0: expected a pair of bytes, got b'ab'"),
    ],
)
def test_bad_merges_shapes(merges: object, message: str) -> None:
    with pytest.raises(FormatError) as info:
        loads_merges(pickle.dumps(merges))
    assert str(info.value).startswith(message)


def test_merge_result_missing_from_vocab_names_the_merge() -> None:
    merges = [(b" ", b"t")] * 0 + [(bytes([i]), bytes([i + 1])) for i in range(17)]
    merges.append((b"ab", b"c"))
    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({256 + i: a + b for i, (a, b) in enumerate(merges[:17])})
    vocab[400] = b"ab"
    with pytest.raises(FormatError) as info:
        loads_pickles(dumps_vocab(vocab), dumps_merges(merges))
    assert str(info.value).startswith(
        "merges.pkl: merge 17 (b'ab', b'c'): b'abc' is not in the vocab"
    )


def test_merge_part_missing_from_vocab() -> None:
    with pytest.raises(FormatError, match=r"merge 0 \(b'x', b'y'\): b'x' is not in the vocab"):
        loads_pickles(dumps_vocab({0: b"y", 1: b"xy"}), dumps_merges([(b"x", b"y")]))


# ---------------------------------------------------------------------------------------------
# Compatibility and round trips
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("pairs_as", [tuple, list])
def test_reads_pickles_of_every_protocol(protocol: int, pairs_as: type) -> None:
    vocab = dict(VOCAB)
    vocab[999] = b""[:0] + b"\x00\xff"  # non-ASCII bytes go through _codecs.encode in protocol < 3
    merges = [pairs_as(m) for m in MERGES]
    assert loads_vocab(pickle.dumps(vocab, protocol=protocol)) == vocab
    assert loads_merges(pickle.dumps(merges, protocol=protocol)) == MERGES


def test_reads_empty_bytes_pickled_with_old_protocols() -> None:
    # b"" pickles as bytes() under protocols 0-2; the shape check then rejects the empty token
    for protocol in (0, 1, 2):
        assert safe_loads(pickle.dumps([b""], protocol=protocol)) == [b""]


def test_file_round_trip(tmp_path: Path) -> None:
    save_pickles(VOCAB, MERGES, tmp_path / "vocab.pkl", tmp_path / "merges.pkl")
    with open(tmp_path / "vocab.pkl", "rb") as fh:
        assert pickle.load(fh) == VOCAB  # plain pickles, readable by CS336 code
    assert load_pickles(tmp_path / "vocab.pkl", tmp_path / "merges.pkl") == (VOCAB, MERGES)


def test_missing_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="nope.pkl: cannot read the file"):
        load_pickles(tmp_path / "nope.pkl", tmp_path / "merges.pkl")


tokens = st.binary(min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, database=None)
@given(
    st.dictionaries(st.integers(min_value=0, max_value=10**9), tokens, max_size=40).filter(
        lambda d: len(set(d.values())) == len(d) and d
    ),
    st.lists(st.tuples(tokens, tokens), max_size=40, unique=True),
)
def test_round_trip_property(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]]) -> None:
    assert loads_vocab(dumps_vocab(vocab)) == vocab
    assert loads_merges(dumps_merges(merges)) == merges
