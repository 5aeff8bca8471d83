"""A SentencePiece ``.model`` file checked and put together into a PipelineTokenizer.

:func:`load_sentencepiece_model` parses the file (:mod:`core.pipeline.sentencepiece.proto`),
refuses what SentencePiece refuses (``InitializePieces``), builds the stages and runs the
file's own self-test; :func:`sentencepiece_tokenizer` puts them in a
:class:`~core.pipeline.tokenizer.PipelineTokenizer`. Both start from a parsed ``ModelProto``
(:func:`model_from_proto`, :func:`tokenizer_from_proto`): the one door for ``.model`` files
and for vocabularies that arrive as a ModelProto from elsewhere (GGUF ``llama`` and ``t5``).
BPE models get :class:`~core.pipeline.sentencepiece.bpe.SentencePieceBPE`, Unigram models
:class:`~core.pipeline.models.unigram.UnigramModel`; WORD and CHAR models are refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from core.errors import FormatError
from core.pipeline.models.unigram import UnigramModel, sentencepiece_unigram
from core.pipeline.piece import Piece
from core.pipeline.post_processors import Template
from core.pipeline.sentencepiece.bpe import SentencePieceBPE
from core.pipeline.sentencepiece.decoder import SentencePieceDecoder
from core.pipeline.sentencepiece.native_words import columns_words, packed_words
from core.pipeline.sentencepiece.normalizer import SentencePieceNormalizer
from core.pipeline.sentencepiece.proto import (
    BPE,
    BYTE,
    BYTE_PIECES,
    CHAR,
    CONTROL,
    UNIGRAM,
    UNKNOWN,
    USER_DEFINED,
    WORD,
    ModelProto,
    parse_model_proto,
    sniff_model_proto,
)
from core.pipeline.sentencepiece.tables import (
    first_of_type,
    has_repeats,
    ids_of_type,
    piece_tables,
    type_codes,
)
from core.pipeline.tokenizer import PipelineTokenizer

__all__ = [
    "SentencePieceModel",
    "SentencePieceWords",
    "load_sentencepiece_model",
    "looks_like_sentencepiece",
    "model_from_proto",
    "sentencepiece_tokenizer",
    "tokenizer_from_proto",
]

_MODEL_NAMES = {UNIGRAM: "Unigram", BPE: "BPE", WORD: "WORD", CHAR: "CHAR"}


def looks_like_sentencepiece(data: bytes) -> bool:
    """A cheap sniff for format detection: the bytes start like a SentencePiece ``.model``
    (a serialized ModelProto whose first fields are pieces with a string and a score).

    >>> looks_like_sentencepiece(b'{"version": "1.0"}'), looks_like_sentencepiece(b"\\x80\\x04")
    (False, False)
    """
    return sniff_model_proto(data)


class SentencePieceWords:
    """A pre-tokenizer made of :meth:`SentencePieceBPE.words`: it shows the pages where no
    token can cross (SentencePiece itself has no pre-tokenizer), so "why this split" traces
    one word instead of the whole text. Encoding is unchanged: each word is what the model
    would cut anyway.
    """

    description = "SentencePiece words (cut where no piece can cross)"
    #: its words never depend on where a piece starts in the text (split_str is exact)
    positional = False

    def __init__(self, model: SentencePieceBPE) -> None:
        self.model = model

    def split_str(self, text: str) -> list[str]:
        """:meth:`split` on a plain string: the words alone."""
        return self.model.words(text)

    def encode_str(self, text: str, out: list[int]) -> None:
        """``self.model.encode_words(self.split_str(text), out)`` in one pass (the encode
        plan's, :mod:`core.pipeline.fast_encode`, when this cuts for its tokenizer's model)."""
        self.model.encode_text(text, out)

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
    model: SentencePieceBPE | UnigramModel
    decoder: SentencePieceDecoder
    bos_id: int  # -1 when the file has no CONTROL piece named trainer_spec.bos_piece
    eos_id: int
    #: the piece types as bytes (:func:`type_codes`), to find types by byte searches
    codes: bytes | None = field(default=None, compare=False, repr=False)


def _pieces_look_right(
    proto: ModelProto,
    vocab: dict[str, int] | None = None,
    codes: bytes | None = None,
    *,
    unique: bool = False,
) -> bool:
    """True when :func:`_check_pieces` has nothing to refuse, found with whole-list
    operations (C loops); only when this says no does the check walk piece by piece, to
    name the first problem as SentencePiece would. ``vocab``, when given, is ``text -> ID``
    for ``proto``'s pieces (the BPE model builds it anyway): its size then tells whether
    some text is spelled twice, else :func:`has_repeats` does; ``unique``: no text is
    empty or spelled twice (the C table the BPE model encodes with found so: no dict at
    all); ``codes`` is ``type_codes(proto.piece_types)``."""
    types, texts_of = _types_and_texts(proto)
    count = types.count if codes is None else codes.count  # (a byte count: no int compares)
    if not unique:
        texts = proto.piece_texts
        if vocab is None:  # (a Unigram model: one C pass where built, no dict)
            unique = "" not in texts and not has_repeats(texts)
        else:
            unique = "" not in vocab and len(vocab) == len(texts)
        if not unique:
            return False
    if not len(types) or count(UNKNOWN) != 1:
        return False
    bytes_found = count(BYTE)
    if not bytes_found:
        return not proto.trainer_spec.byte_fallback
    if not proto.trainer_spec.byte_fallback or bytes_found != 256:
        return False
    # 256 BYTE pieces, each spelled once: they are <0x00>..<0xFF> when their texts are those
    return set(texts_of(ids_of_type(types, BYTE, codes))) == BYTE_PIECES.keys()


def _types_and_texts(
    proto: ModelProto,
) -> tuple[Sequence[int], Callable[[list[int]], list[str]]]:
    """``proto``'s types by ID, and ``texts_of(ids)``: some pieces' texts by ID; both read
    without unpacking its pieces (:mod:`core.pipeline.sentencepiece.packed`) while packed."""
    packed = proto.packed
    if packed is not None:
        return packed.types, packed.texts_of
    texts = proto.piece_texts
    return proto.piece_types, lambda ids: list(map(texts.__getitem__, ids))


def _check_pieces(
    proto: ModelProto,
    name: str,
    vocab: dict[str, int] | None = None,
    codes: bytes | None = None,
    *,
    unique: bool = False,
) -> None:
    """What model_interface.cc's InitializePieces refuses, refused the same way (``vocab``,
    ``codes`` and ``unique``: see :func:`_pieces_look_right`)."""
    if _pieces_look_right(proto, vocab, codes, unique=unique):
        return
    if not proto.piece_texts:
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
            if p.piece not in BYTE_PIECES:
                raise FormatError(
                    f"{name}: {p.piece!r} (ID {i}) is not a valid byte piece"
                )
            byte_found.add(BYTE_PIECES[p.piece])
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
    """Parse and check a ``.model`` file; build its normalizer, model and decoder."""
    return model_from_proto(parse_model_proto(data, name=name), name=name)


def _check_scores(proto: ModelProto, name: str) -> None:
    """sentencepiece 0.2.3's unigram ``Model`` refuses a NaN or infinite score."""
    if all(map(math.isfinite, proto.piece_scores)):
        return
    for i, p in enumerate(proto.pieces):
        if p.score != p.score or p.score in (float("inf"), float("-inf")):
            raise FormatError(
                f"{name}: piece {p.piece!r} (ID {i}) has score {p.score}; a Unigram model "
                "needs finite scores (NaN or Inf), as SentencePiece does"
            )


def model_from_proto(proto: ModelProto, *, name: str = "tokenizer.model") -> SentencePieceModel:
    """Check a parsed ``ModelProto`` as SentencePiece does when it loads one, and build its
    normalizer, its model (BPE or Unigram) and its decoder."""
    spec = proto.trainer_spec
    if spec.model_type not in (BPE, UNIGRAM):
        kind = _MODEL_NAMES.get(spec.model_type, str(spec.model_type))
        if not proto.piece_texts:
            raise FormatError(
                f"{name}: the model has no pieces; is this a SentencePiece model?"
            )
        raise FormatError(
            f"{name}: SentencePiece {kind} models are not supported; BPE and Unigram ones "
            "are (trainer_spec.model_type)"
        )
    types, texts_of = _types_and_texts(proto)
    codes = type_codes(types)
    user = texts_of(ids_of_type(types, USER_DEFINED, codes))
    # (a BPE model's tables, built first: the checks below read them; where the C twin is
    # built, its one table instead of the dicts, which the model then makes on first use;
    # from the file's bytes while its pieces are packed, so no list is made at all)
    words_table, tables = None, None
    if spec.model_type == BPE:
        unk = first_of_type(types, UNKNOWN, codes)
        try:
            if proto.packed is not None:
                words_table = packed_words(
                    proto.packed, unk=unk, byte_fallback=spec.byte_fallback, user_defined=user
                )
            else:
                words_table = columns_words(
                    proto.piece_texts, proto.piece_scores, proto.piece_types, unk=unk,
                    byte_fallback=spec.byte_fallback, user_defined=user,
                )  # fmt: skip
        except ValueError:  # (a text empty or spelled twice: _check_pieces names it)
            pass
        if words_table is None:
            tables = piece_tables(proto.piece_texts, proto.piece_scores, proto.piece_types)
    vocab = None if tables is None else tables[0]
    _check_pieces(proto, name, vocab, codes, unique=words_table is not None)
    if spec.model_type == UNIGRAM:
        _check_scores(proto, name)
    deno = proto.denormalizer_spec
    if deno is not None and deno.precompiled_charsmap:
        raise FormatError(
            f"{name}: the model has a denormalization rule (denormalizer_spec), which is not "
            "supported yet"
        )
    normalizer = SentencePieceNormalizer.from_spec(
        proto.normalizer_spec,
        treat_whitespace_as_suffix=spec.treat_whitespace_as_suffix,
        user_defined_symbols=user,
        name=name,
    )
    model: SentencePieceBPE | UnigramModel
    if spec.model_type == UNIGRAM:
        model = sentencepiece_unigram(proto, byte_fallback=spec.byte_fallback)
    else:
        model = SentencePieceBPE(
            proto, byte_fallback=spec.byte_fallback, tables=tables, user_defined=user,
            words_table=words_table, codes=codes,
        )  # fmt: skip
    unk_id = model.unk_id if model.unk_id is not None else -1  # (checked: a file has one)
    decoder = SentencePieceDecoder(
        unk_piece=texts_of([unk_id])[0],
        unk_surface=spec.unk_surface,
        add_dummy_prefix=proto.normalizer_spec.add_dummy_prefix,
        remove_extra_whitespaces=proto.normalizer_spec.remove_extra_whitespaces,
        piece_ids=model.vocab,  # (a piece's type: types[vocab[piece]], as PieceToId)
        types=types,
    )

    def control_id(piece: str) -> int:
        found = model.piece_to_id(piece)
        return found if types[found] == CONTROL else -1

    loaded = SentencePieceModel(
        proto,
        normalizer,
        model,
        decoder,
        control_id(spec.bos_piece),
        control_id(spec.eos_piece),
        codes,
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
    """A SentencePiece ``.model`` file (BPE or Unigram) as a :class:`PipelineTokenizer`.

    IDs equal ``SentencePieceProcessor.encode(text)``; ``add_special_tokens=True`` puts the
    BOS piece first (``encode(text, add_bos=True)``), ``decode`` equals its ``decode``.
    The special tokens are the CONTROL pieces; like SentencePiece, encoding never matches
    them in the text. Raises :class:`FormatError` for a malformed file or an unsupported
    model (WORD, CHAR; a denormalization rule).
    """
    return tokenizer_from_proto(parse_model_proto(data, name=name), name=name)


def tokenizer_from_proto(proto: ModelProto, *, name: str = "tokenizer.model") -> PipelineTokenizer:
    """:func:`sentencepiece_tokenizer` for a ``ModelProto`` already parsed or built."""
    loaded = model_from_proto(proto, name=name)
    types, texts_of = _types_and_texts(loaded.proto)
    bos = loaded.bos_id
    template = Template((bos,), (), f"{texts_of([bos])[0]} $A") if bos >= 0 else Template()
    model = loaded.model
    unigram = isinstance(model, UnigramModel)
    tok = PipelineTokenizer(
        model=model,
        normalizer=loaded.normalizer,
        # subtle: without byte fallback a run of unknown characters is one <unk> even across
        # words, so words are shown only when byte fallback keeps them independent; a
        # Unigram text is one lattice (its float32 sums tie words together): never cut
        pre_tokenizer=(
            SentencePieceWords(model)
            if not isinstance(model, UnigramModel) and model.byte_fallback
            else None
        ),
        template=template,
        decoder=loaded.decoder,
        name=name,
        kind=model.kind,
        pattern=(
            "none: the best path by piece scores over the whole normalized text"
            if unigram
            else "none: BPE over the whole normalized text (shown cut where no token crosses)"
        ),
    )
    # Control pieces are special but never matched in the input text, so they are not
    # PipelineTokenizer added tokens (those always are matched): listed here instead.
    control_ids = ids_of_type(types, CONTROL, loaded.codes)
    controls = dict(zip(texts_of(control_ids), control_ids))
    tok.special_tokens = list(controls)
    tok.special_token_ids = controls
    return tok
