"""core.pipeline.models.unigram's Viterbi search on made-up vocabularies, against both references:
``sentencepiece`` (a ``ModelProto`` built here, with no normalization, so the model sees the
text as typed) and ``tokenizers``' ``Unigram`` model (no normalizer, no pre-tokenizer).

Small alphabets and few distinct scores make exact ties common (``a`` + ``aa`` against
``aa`` + ``a``): sentencepiece breaks them by its float32 sums, ``tokenizers`` by float64.
"""

from __future__ import annotations

import sentencepiece
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st
from sentencepiece import sentencepiece_model_pb2 as pb2

from core.pipeline.sentencepiece.proto import parse_model_proto
from core.pipeline.models.unigram import UnigramModel, sentencepiece_unigram

ALPHABET = "ab▁é😀"
SCORES = [-1.0, -1.5, -2.0, -2.5, -3.0, -0.1, -7.25, -12.125, -3.3333333]

# (piece, score) lists: every piece at least one character of ALPHABET
_pieces = st.lists(
    st.tuples(st.text(ALPHABET, min_size=1, max_size=4), st.sampled_from(SCORES)),
    min_size=1,
    max_size=25,
)
_texts = st.text(ALPHABET + "x", max_size=40)


def _proto(pieces: list[tuple[str, float, int]], *, byte_fallback: bool = False) -> bytes:
    """A serialized SentencePiece UNIGRAM ModelProto: <unk> first, then ``pieces``."""
    proto = pb2.ModelProto()
    proto.trainer_spec.model_type = pb2.TrainerSpec.UNIGRAM
    proto.trainer_spec.byte_fallback = byte_fallback
    proto.normalizer_spec.add_dummy_prefix = False
    proto.normalizer_spec.remove_extra_whitespaces = False
    proto.normalizer_spec.escape_whitespaces = False
    entries = [("<unk>", 0.0, pb2.ModelProto.SentencePiece.UNKNOWN)] + pieces
    if byte_fallback:
        entries += [(f"<0x{b:02X}>", 0.0, pb2.ModelProto.SentencePiece.BYTE) for b in range(256)]
    for piece, score, kind in entries:
        entry = proto.pieces.add()
        entry.piece, entry.score, entry.type = piece, score, kind
    return proto.SerializeToString()


def _dedupe(pieces: list[tuple[str, float]]) -> list[tuple[str, float]]:
    seen: dict[str, float] = {}
    for piece, score in pieces:
        seen.setdefault(piece, score)
    return list(seen.items())


def _ours_and_sp(pieces: list[tuple[str, float, int]], *, byte_fallback: bool = False):
    data = _proto(pieces, byte_fallback=byte_fallback)
    proto = parse_model_proto(data)
    ours = sentencepiece_unigram(proto.pieces, byte_fallback=byte_fallback)
    return ours, sentencepiece.SentencePieceProcessor(model_proto=data)


@settings(max_examples=300, deadline=None)
@given(_pieces, st.lists(_texts, min_size=1, max_size=5), st.booleans())
def test_random_vocabularies_like_sentencepiece(pieces, texts, byte_fallback):
    normal = [(p, s, pb2.ModelProto.SentencePiece.NORMAL) for p, s in _dedupe(pieces)]
    ours, sp = _ours_and_sp(normal, byte_fallback=byte_fallback)
    for text in texts:
        assert [i for i, _, _ in ours.tokenize(text)] == sp.encode(text), text


@settings(max_examples=150, deadline=None)
@given(_pieces, st.lists(_texts, min_size=1, max_size=5), st.data())
def test_user_defined_and_unused_pieces_like_sentencepiece(pieces, texts, data):
    kinds = [pb2.ModelProto.SentencePiece.NORMAL, pb2.ModelProto.SentencePiece.USER_DEFINED,
             pb2.ModelProto.SentencePiece.UNUSED]  # fmt: skip
    typed = [(p, s, data.draw(st.sampled_from(kinds))) for p, s in _dedupe(pieces)]
    ours, sp = _ours_and_sp(typed)
    for text in texts:
        assert [i for i, _, _ in ours.tokenize(text)] == sp.encode(text), text


def test_exact_ties_break_as_sentencepiece_float32_sums():
    """``a`` + ``aa`` + ``aa`` and ``aa`` + ``a`` + ``aa`` score the same; which one wins depends
    on the float32 rounding of every sum before them. (Found by a search against
    sentencepiece: a float64 search splits this text the other way.)"""
    normal = pb2.ModelProto.SentencePiece.NORMAL
    pieces = [("a", -2.7182817), ("aa", -5.4365634), ("b", -12.125), ("ab", -6.9564398681052335),
              ("ba", -6.131715905952838), ("aaa", -5.785978388174978)]  # fmt: skip
    ours, sp = _ours_and_sp([(p, s, normal) for p, s in pieces])
    text = "baaaabbabaaaabbabaaabaaaaaaaabaaaaaaa"
    assert [i for i, _, _ in ours.tokenize(text)] == sp.encode(text)


def _hf(pieces: list[tuple[str, float]], unk_id: int | None, byte_fallback: bool):
    model = tokenizers.models.Unigram(pieces, unk_id=unk_id, byte_fallback=byte_fallback)
    return tokenizers.Tokenizer(model)


@settings(max_examples=300, deadline=None)
@given(_pieces, st.lists(_texts, min_size=1, max_size=5), st.booleans())
def test_random_vocabularies_like_tokenizers(pieces, texts, byte_fallback):
    vocab = [("<unk>", 0.0)] + pieces  # repeated pieces too: the last ID wins in both
    if byte_fallback:
        vocab += [(f"<0x{b:02X}>", -20.0) for b in range(256)]
    ours = UnigramModel(vocab, unk_id=0, byte_fallback=byte_fallback)
    hf = _hf(vocab, 0, byte_fallback)
    for text in texts:
        assert [i for i, _, _ in ours.tokenize(text)] == hf.encode(text).ids, text


def test_tokenizers_offsets_and_fused_unknowns():
    vocab = [("<unk>", 0.0), ("a", -1.0), ("ab", -1.5), ("<0x78>", -3.0)]
    ours = UnigramModel(vocab, unk_id=0)
    hf = _hf(vocab, 0, False).encode("abxy😀a")
    assert [(i, s, e) for i, s, e in ours.tokenize("abxy😀a")] == [
        (2, 0, 2), (0, 2, 5), (1, 5, 6)]  # fmt: skip
    assert hf.ids == [2, 0, 1]
    # byte fallback: a run of unknown characters becomes the bytes of the whole run, but
    # only when every byte has a piece (here 0x79 'y' has none: <unk>)
    fallback = UnigramModel(vocab, unk_id=0, byte_fallback=True)
    assert [i for i, _, _ in fallback.tokenize("xx")] == _hf(vocab, 0, True).encode("xx").ids
    assert [i for i, _, _ in fallback.tokenize("xy")] == _hf(vocab, 0, True).encode("xy").ids


def test_split_paths_name_the_best_and_the_runner_up():
    ours = UnigramModel([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)], unk_id=0)
    paths = ours.split_paths("abab")
    assert [n.piece for n in paths.best.nodes] == ["ab", "ab"]
    assert paths.best.score == -5.0
    # (a tie with ["ab", "a", "b"]: as in the search, the path offered first stays)
    assert [n.piece for n in paths.runner_up.nodes] == ["a", "b", "ab"]
    assert paths.runner_up.score == -5.5
    assert ours.split_paths("").best.nodes == ()
