"""A GGUF file's tokenizer metadata as the playground's tokenizer objects.

``tokenizer.ggml.model`` says which kind, and each kind becomes what the file loaders
already give for that kind of model:

- ``gpt2``: byte-level BPE (tokens spelled through GPT-2's byte map, ``merges`` as
  ``"left right"``), cut first by the regexes llama.cpp maps to ``tokenizer.ggml.pre``
  (:mod:`core.formats.gguf_pre`). One regex: the fast :class:`~core.engine.tokenizer.Tokenizer`;
  several in a row: a :class:`~core.pipeline.tokenizer.PipelineTokenizer` with a
  ``Split`` per regex, as Hugging Face's ``tokenizer.json`` for those models has.
- ``gemma4``: BPE over raw UTF-8 with SentencePiece's ``▁`` and byte fallback (a pipeline,
  its model built from the merges' IDs: :mod:`core.formats.gguf_bpe`).
- ``llama`` / ``t5``: SentencePiece BPE / Unigram, written back as a ``.model``
  (:mod:`core.formats.gguf_spm`) and read by the SentencePiece loader; a llama vocab's
  pieces stay packed as the file holds them (:mod:`core.formats.gguf_packed`).
- ``bert``: WordPiece, with llama.cpp's "phantom space" spelling undone (``▁word`` is a
  word start, a bare piece was ``##piece``).

Control and user-defined tokens (``token_type`` 3 and 4) are the added tokens: typed in
the text, they count as special, as in Hugging Face. ``add_bos_token``/``add_eos_token``
(or llama.cpp's default for the kind) decide what ``add_special_tokens=True`` adds.

>>> from core.formats.gguf import read_gguf_metadata, write_gguf
>>> blob = write_gguf({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2",
...     "tokenizer.ggml.tokens": ["h", "i", "hi", "<|end|>"], "tokenizer.ggml.token_type": [1, 1, 1, 3],
...     "tokenizer.ggml.merges": ["h i"]})
>>> tok = tokenizer_from_gguf(blob)
>>> tok.encode("hi<|end|>"), tok.special_tokens
([2, 3], ['<|end|>'])
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Sequence
from itertools import compress
from typing import IO, Any, NamedTuple

from core.engine.bytes_unicode import from_gpt2_strs
from core.engine.pretokenize import PATTERNS
from core.engine.tokenizer import Tokenizer
from core.engine.vocab_index import IdColumns, merge_ids
from core.errors import FormatError
from core.formats import gguf_tables, table_cache
from core.formats.gguf import GGUFMetadata, GGUFStrings, read_gguf_metadata
from core.formats.gguf_bpe import PACKED_KINDS, bpe_model_of, in_c
from core.formats.gguf_columns import (
    BYTE,
    CONTROL,
    KEY as _KEY,
    NORMAL,
    UNKNOWN,
    UNUSED,
    Vocab as _Vocab,
    checked_vocab as _vocab,
    packed_vocab,
    typed_list as _typed_list,
)
from core.formats.gguf_packed import packed_pieces
from core.formats.gguf_pre import PRE_REGEXES, PreTokenizerSpec, pre_tokenizer_spec
from core.formats.gguf_spm import (
    BPE_MODEL,
    UNIGRAM_MODEL,
    SpmPiece,
    model_proto,
    model_proto_bytes,
    packed_model_proto,
)
from core.pipeline.hf import pipeline_from_hf_json
from core.pipeline.sentencepiece import tokenizer_from_proto
from core.pipeline.sentencepiece.packed import PieceColumns
from core.pipeline.sentencepiece.proto import ModelProto
from core.pipeline.sentencepiece.tables import type_codes
from core.pipeline.tokenizer import PipelineTokenizer

__all__ = [
    "GGUFTokenizer",
    "sentencepiece_model_from_gguf",
    "tokenizer_from_gguf",
    "tokenizer_from_gguf_metadata",
]

GGUFTokenizer = Tokenizer | PipelineTokenizer


class _Built(NamedTuple):
    """A builder's tokenizer, and the ``tokenizer.json`` document of a pipeline whose BPE
    tables are worth caching (:data:`core.formats.gguf_tables.PIPELINE`), else None."""

    tok: GGUFTokenizer
    doc: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------------
# gpt2: byte-level BPE
# ---------------------------------------------------------------------------------------------


def _merge_pairs(v: _Vocab) -> list[tuple[str, str]]:
    """``"left right"`` strings as pairs, cut as llama.cpp cuts them: at the first space
    after the first character (so a merge whose left part is a space still reads)."""
    merges = _typed_list(v.meta, _KEY + "merges", "strings")
    if merges is None:
        raise FormatError(f"{v.name}: a BPE tokenizer needs tokenizer.ggml.merges; it is missing")
    # str.split runs in C; only a merge that starts with a space needs find(" ", 1)
    parts = [m.split(" ", 1) if m[:1] != " " else _cut_after_first(m) for m in merges]
    bad = next((i for i, p in enumerate(parts) if len(p) != 2), None)
    if bad is not None:
        raise FormatError(
            f"{v.name}: tokenizer.ggml.merges[{bad}] is {merges[bad]!r}; expected \"left right\""
        )
    return [(left, right) for left, right in parts]


def _cut_after_first(merge: str) -> list[str]:
    cut = merge.find(" ", 1)
    return [merge[:cut], merge[cut + 1 :]] if cut > 0 else [merge]


def _byte_vocab(v: _Vocab) -> dict[int, bytes] | None:
    """ID -> bytes for the fast tokenizer, or None when it cannot hold this vocab.

    The fast tokenizer needs every single byte as a token and every ordinary token spelled
    through the byte map; a vocab without some bytes (GPT-NeoX lacks 0xC0, 0xF5...) or with
    tokens outside the map (Command-R's ``\\u200d``, reachable by no text) goes through the
    pipeline, which treats them as Hugging Face does. Control, user-defined and unused
    tokens are plain text (their UTF-8)."""
    normal = [i for i, k in enumerate(v.types) if k == NORMAL]
    mapped = from_gpt2_strs([v.tokens[i] for i in normal])
    if mapped is None:
        return None
    table = list(map(str.encode, v.tokens))  # (UTF-8; the normal tokens' bytes go in next)
    for token_id, token in zip(normal, mapped):
        table[token_id] = token
    vocab = dict(enumerate(table))
    singles = set(compress(table, map((1).__eq__, map(len, table))))
    return vocab if len(singles) == 256 else None


_count_spaces = operator.methodcaller("count", " ")


def _id_merges(v: _Vocab) -> IdColumns | None:
    """The merges as the IDs of normal tokens, read a whole list at a time (a few C calls
    instead of a split per merge), or None when a merge is not two normal tokens with one
    space between them: :func:`_merge_pairs` then reads them one by one."""
    merges = _typed_list(v.meta, _KEY + "merges", "strings")
    if not merges:
        return None
    normal = {t: i for i, (t, k) in enumerate(zip(v.tokens, v.types)) if k == NORMAL}
    split = merge_ids(merges, normal)  # (in C where built; else None, and on to the pure pass)
    if split is not None:
        return split
    if set(map(_count_spaces, merges)) != {1}:
        return None
    try:
        flat = list(map(normal.__getitem__, " ".join(merges).split(" ")))
    except KeyError:
        return None
    return IdColumns(flat[::2], flat[1::2])


def _byte_merges(pairs: list[tuple[str, str]]) -> list[tuple[bytes, bytes]] | None:
    """The merges as byte pairs, or None when a part is not in GPT-2's byte map."""
    lefts = from_gpt2_strs([a for a, _ in pairs])
    rights = from_gpt2_strs([b for _, b in pairs])
    if lefts is None or rights is None:
        return None
    return list(zip(lefts, rights))


def _fast_pattern(regex: str) -> str:
    """The fast tokenizer's pattern for one llama.cpp regex: a name from
    :data:`~core.engine.pretokenize.PATTERNS` when it is one of those (llama3, tekken, o200k; they
    have ASCII fast paths), else :func:`_gap_safe`.

    subtle: llama.cpp's GPT-2 regex lacks tiktoken's final ``|\\s+``; what that leaves
    unmatched (one whitespace character before a non-space) is a piece of its own there and
    under ``\\s+`` alike, so it is GPT-2's pattern."""
    if regex == PRE_REGEXES["gpt2"][0]:
        return "gpt2"
    return next((name for name, known in PATTERNS.items() if regex == known), _gap_safe(regex))


def _gap_safe(regex: str) -> str:
    """``regex`` as a findall pattern that also keeps the text between matches.

    subtle: llama.cpp (and Hugging Face's Split) keep the unmatched text between matches as
    pieces of their own, and some of llama.cpp's regexes rely on it (GPT-2's has no final
    ``|\\s+``, so a lone ``\\n`` before a letter is such a gap). The fast tokenizer only
    keeps matches, so a second alternative takes the characters where ``regex`` fails.
    """
    return f"(?:{regex})|(?:(?!(?:{regex}))[\\s\\S])+"


def _byte_level_bpe(v: _Vocab, spec: PreTokenizerSpec) -> _Built:
    template = v.template(
        bos=None if spec.no_bos else v.special_id("bos", 11),
        eos=v.special_id("eos", 11),
        add_bos=v.flag("add_bos_token", spec.add_bos),
        add_eos=v.flag("add_eos_token", False),
    )
    added = v.added()
    # one regex: the fast tokenizer, if it can hold the vocab; several: Splits in a pipeline
    vocab = _byte_vocab(v) if len(spec.regexes) == 1 else None
    # the usual case: normal tokens' IDs, and no merge turned into bytes and back
    id_merges = _id_merges(v) if vocab is not None else None
    if vocab is not None and id_merges is not None:
        return _Built(Tokenizer.from_id_merges(
            vocab, id_merges, {t: i for i, t, _ in added},
            pattern=_fast_pattern(spec.regexes[0]), name=v.name,
            ignore_merges=spec.ignore_merges, template=template,
        ))  # fmt: skip
    pairs = _merge_pairs(v)
    merges = _byte_merges(pairs) if vocab is not None else None
    if vocab is not None and merges is not None:
        return _Built(Tokenizer(
            vocab, merges, {t: i for i, t, _ in added}, pattern=_fast_pattern(spec.regexes[0]),
            name=v.name, ignore_merges=spec.ignore_merges, template=template,
        ))  # fmt: skip
    doc = _hf_doc(
        v,
        model={"type": "BPE", "vocab": _vocab_map(v), "merges": [list(p) for p in pairs],
               "ignore_merges": spec.ignore_merges},  # fmt: skip
        pre_tokenizer=_splits(spec.regexes, [_BYTE_LEVEL]),
        decoder=_BYTE_LEVEL,
    )
    tok = pipeline_from_hf_json(doc, name=v.name)
    tok.template = template
    return _Built(tok, doc)


_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
               "use_regex": False}  # fmt: skip


def _splits(regexes: tuple[str, ...], after: list[dict[str, Any]]) -> dict[str, Any]:
    steps = [
        {"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
        for r in regexes
    ]
    return {"type": "Sequence", "pretokenizers": steps + after}


def _vocab_map(v: _Vocab) -> dict[str, int]:
    return {t: i for i, t in enumerate(v.tokens)}


def _hf_doc(v: _Vocab, **sections: Any) -> dict[str, Any]:
    """A ``tokenizer.json`` document: the added tokens from the token types, and
    ``sections`` (model, pre_tokenizer, normalizer, decoder)."""
    added = [
        {"id": i, "content": t, "special": k == CONTROL, "normalized": False,
         "single_word": False, "lstrip": False, "rstrip": False}  # fmt: skip
        for i, t, k in v.added()
    ]
    doc: dict[str, Any] = {"version": "1.0", "added_tokens": added, "normalizer": None,
                           "pre_tokenizer": None, "post_processor": None, "decoder": None}  # fmt: skip
    doc.update(sections)
    return doc


def _gpt2(v: _Vocab) -> _Built:
    spec = pre_tokenizer_spec(v.meta.get(_KEY + "pre"), file_name=v.name)
    if spec.key == "gemma4":
        return _gemma4(v)
    if not spec.byte_level:
        raise FormatError(
            f"{v.name}: the {spec.name!r} pre-tokenizer works on raw UTF-8 tokens, which the "
            "playground does not read from GGUF yet; load the model's tokenizer.json instead"
        )
    return _byte_level_bpe(v, spec)


def _gemma4(v: _Vocab) -> _Built:
    """Gemma 4: spaces become ``▁``, the text is cut only between newline runs and the
    rest (llama.cpp's ``[^\\n]+|[\\n]+``), then BPE on the characters, with byte fallback.
    Packed tokens: the model from their IDs (:mod:`core.formats.gguf_bpe`), else from lists.
    subtle: where C built it from packed tokens, its cached tables would read back slower
    than it was built (0.45 s against 0.4 s), so none are kept."""
    spec = pre_tokenizer_spec("gemma4", file_name=v.name)
    settings = {"type": "BPE", "byte_fallback": BYTE in v.types, "ignore_merges": False}
    raw = v.meta.get(_KEY + "merges")
    merges = raw if isinstance(raw, GGUFStrings) else _typed_list(v.meta, _KEY + "merges", "strings")
    model = None if merges is None else bpe_model_of(v.tokens, merges, settings, name=v.name)
    if model is None and isinstance(v.tokens, GGUFStrings):  # (_built reads the lists next)
        raise FormatError(f"{v.name}: the packed vocab needs the list route")
    if model is None:  # (the careful route: it names what is wrong)
        settings |= {"vocab": _vocab_map(v), "merges": [list(p) for p in _merge_pairs(v)]}
    doc = _hf_doc(
        v,
        normalizer={"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        pre_tokenizer=_splits(spec.regexes, []),
        model=settings,
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},  # fmt: skip
    )
    tok = pipeline_from_hf_json(doc, name=v.name, model=model)
    tok.template = v.template(bos=v.special_id("bos", None), eos=v.special_id("eos", None),
                              add_bos=True, add_eos=v.flag("add_eos_token", False))  # fmt: skip
    return _Built(tok, None if in_c(v.tokens, merges or []) else doc)


# ---------------------------------------------------------------------------------------------
# llama / t5: SentencePiece; bert: WordPiece
# ---------------------------------------------------------------------------------------------


_SPM_TYPE = bytes(k if NORMAL <= k <= BYTE else NORMAL for k in range(256))  # (a translate table)


def _spm_types(types: Sequence[int], unk: int | None) -> bytes:
    """The token types as SentencePiece piece types, one byte each; one outside 1..6 is
    NORMAL, as SentencePiece reads it.

    subtle: llama.cpp's converter marks Hugging Face's padding tokens (``[PAD32011]``, Phi-3)
    UNKNOWN too, and may mark the real ``<unk>`` CONTROL; SentencePiece wants exactly one
    UNKNOWN piece. The unknown token's ID decides: it is UNKNOWN, other UNKNOWNs are UNUSED
    (never produced, as in llama.cpp)."""
    codes = types if isinstance(types, bytes) else type_codes(types)
    if codes is None:  # (a type beyond a byte)
        codes = bytes([k if NORMAL <= k <= BYTE else NORMAL for k in types])
    codes = codes.translate(_SPM_TYPE).replace(bytes([UNKNOWN]), bytes([UNUSED]))
    if unk is not None:
        codes = b"".join((codes[:unk], bytes([UNKNOWN]), codes[unk + 1 :]))
    return codes


_SPM_KINDS = {"llama": (BPE_MODEL, (1, 2, 0, None), (True, False)),
              "t5": (UNIGRAM_MODEL, (None, 1, 2, 0), (False, True))}  # fmt: skip


def _spm_ids(v: _Vocab) -> tuple[int | None, ...]:
    """BOS, EOS, UNK and PAD: the file's, else llama.cpp's defaults for the kind."""
    defaults = _SPM_KINDS[v.meta.get(_KEY + "model")][1]
    names = ("bos", "eos", "unknown", "padding")
    return tuple(v.special_id(what, default) for what, default in zip(names, defaults))


def _spm_bytes(v: _Vocab) -> bytes:
    return model_proto_bytes(
        list(map(SpmPiece, *_spm_columns(v))), **_spm_settings(v)
    )


def _spm_proto(v: _Vocab) -> ModelProto:
    """What ``parse_model_proto(_spm_bytes(v))`` gives, without writing the bytes (nor, for
    a vocab kept packed, making its lists)."""
    if (p := v.packed) is not None:
        types = _spm_types(p.types, _spm_ids(v)[2])
        return packed_model_proto(PieceColumns(p.buf, p.spans, p.scores, types), **_spm_settings(v))
    exact = v.scores is None or v.meta.types.get(_KEY + "scores") == "array[float32]"
    return model_proto(*_spm_columns(v), **_spm_settings(v), float32=exact)


def _spm_columns(v: _Vocab) -> tuple[Sequence[str], list[float], bytes]:
    unk = _spm_ids(v)[2]
    return v.tokens, v.scores or [0.0] * len(v.tokens), _spm_types(v.types, unk)


def _spm_settings(v: _Vocab) -> dict[str, Any]:
    model_type = _SPM_KINDS[v.meta.get(_KEY + "model")][0]
    bos, eos, unk, pad = _spm_ids(v)
    charsmap = _typed_list(v.meta, _KEY + "precompiled_charsmap", "bytes") or []
    return dict(
        model_type=model_type, unk_id=-1 if unk is None else unk,
        bos_id=-1 if bos is None else bos, eos_id=-1 if eos is None else eos,
        pad_id=-1 if pad is None else pad,
        # llama.cpp: a space is put in front for SentencePiece models unless the file says no
        add_dummy_prefix=v.flag("add_space_prefix", True),
        remove_extra_whitespaces=v.flag("remove_extra_whitespaces", False),
        precompiled_charsmap=bytes(map((0xFF).__and__, charsmap)),  # (int8 or uint8)
    )  # fmt: skip


def sentencepiece_model_from_gguf(meta: GGUFMetadata) -> bytes:
    """A ``llama`` or ``t5`` GGUF vocab as the bytes of a SentencePiece ``.model`` (which the
    ``sentencepiece`` library loads too).

    >>> from core.formats.gguf import write_gguf
    >>> meta = read_gguf_metadata(write_gguf({"tokenizer.ggml.model": "gpt2",
    ...                                       "tokenizer.ggml.tokens": ["a"]}))
    >>> sentencepiece_model_from_gguf(meta)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.FormatError: model.gguf: tokenizer.ggml.model is 'gpt2', not a SentencePiece ...
    """
    model = meta.get(_KEY + "model")
    if model not in _SPM_KINDS:
        raise FormatError(
            f"{meta.name}: tokenizer.ggml.model is {model!r}, not a SentencePiece model "
            "(llama or t5)"
        )
    return _spm_bytes(_vocab(meta))


def _sentencepiece(v: _Vocab) -> _Built:
    tok = tokenizer_from_proto(_spm_proto(v), name=v.name)
    bos, eos, _, _ = _spm_ids(v)
    add_bos, add_eos = _SPM_KINDS[v.meta.get(_KEY + "model")][2]
    tok.template = v.template(bos=bos, eos=eos, add_bos=v.flag("add_bos_token", add_bos),
                              add_eos=v.flag("add_eos_token", add_eos))  # fmt: skip
    return _Built(tok)


def _unphantom(token: str, kind: int) -> str:
    """llama.cpp's converter writes ``▁word`` for a word start and ``piece`` for ``##piece``;
    control tokens (and ``[unused0]``-style ones in older files) are kept as they are."""
    if token.startswith("\u2581"):
        return token[1:]
    if kind == CONTROL or (token.startswith("[") and token.endswith("]")):
        return token
    return "##" + token


def _bert(v: _Vocab) -> _Built:
    words = [_unphantom(t, k) for t, k in zip(v.tokens, v.types)]
    unk = v.special_id("unknown", 100)
    if unk is None:
        raise FormatError(f"{v.name}: a WordPiece vocab needs an unknown token; none is set")
    vocab = _Vocab(v.name, words, v.types, v.scores, v.meta)
    lower = v.flag("normalizer.lowercase", True)
    doc = _hf_doc(
        vocab,
        normalizer={"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                    "strip_accents": v.flag("normalizer.strip_accents", lower),
                    "lowercase": lower},  # fmt: skip
        pre_tokenizer={"type": "BertPreTokenizer"},
        model={"type": "WordPiece", "unk_token": words[unk], "continuing_subword_prefix": "##",
               "max_input_chars_per_word": 100, "vocab": _vocab_map(vocab)},  # fmt: skip
        decoder={"type": "WordPiece", "prefix": "##", "cleanup": True},
    )
    tok = pipeline_from_hf_json(doc, name=v.name)
    cls = v.special_id("bos", None)
    cls = cls if cls is not None else v.special_id("cls", 101)
    tok.template = vocab.template(bos=cls, eos=v.special_id("seperator", 102),
                                  add_bos=v.flag("add_bos_token", True),
                                  add_eos=v.flag("add_sep_token", True))  # fmt: skip
    return _Built(tok)


_BUILDERS: dict[str, Callable[[_Vocab], _Built]] = {
    "gpt2": _gpt2,
    "gemma4": _gemma4,
    "llama": _sentencepiece,
    "t5": _sentencepiece,
    "bert": _bert,
}


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def _no_tokenizer(meta: GGUFMetadata) -> FormatError:
    kind = meta.get("general.type") or meta.get("adapter.type")
    if kind in ("adapter", "lora") or "adapter.type" in meta.fields:
        what = "a LoRA adapter"
    elif str(meta.get("general.architecture", "")).startswith("clip") or kind == "mmproj":
        what = "a vision projector (mmproj)"
    else:
        what = "a GGUF file"
    return FormatError(
        f"{meta.name} is {what} without tokenizer metadata (no tokenizer.ggml.model); load "
        "the GGUF of the model itself"
    )


def tokenizer_from_gguf_metadata(meta: GGUFMetadata) -> GGUFTokenizer:
    """The tokenizer that ``meta`` (from :func:`~core.formats.gguf.read_gguf_metadata`)
    describes; :class:`FormatError` for a file without one or a kind we cannot run."""
    return _from_metadata(meta).tok


def _from_metadata(meta: GGUFMetadata) -> _Built:
    model = meta.get(_KEY + "model")
    if model is None:
        raise _no_tokenizer(meta)
    builder = _BUILDERS.get(model) if isinstance(model, str) else None
    if builder is None:
        raise FormatError(
            f"{meta.name}: tokenizer.ggml.model is {model!r}; the playground reads "
            f"{', '.join(sorted(_BUILDERS))}"
        )
    vocab, built = _built(meta, builder)
    tok = built.tok
    template = meta.get("tokenizer.chat_template")
    if isinstance(template, str) and template:
        from core.chat import chat_template_from_gguf  # the Jinja side loads only when used

        named = {
            f"{what}_token": vocab.tokens[i]
            for what, key in (("bos", "bos"), ("eos", "eos"), ("unk", "unknown"), ("pad", "padding"))
            if (i := vocab.special_id(key, None)) is not None
        }
        tok.chat_template = chat_template_from_gguf(template, **named)
    return built


def _built(
    meta: GGUFMetadata, builder: Callable[[_Vocab], _Built]
) -> tuple[_Vocab, _Built]:
    """The vocab and its tokenizer: a llama vocab's pieces packed where the reader kept them
    so (no str made), else lists. subtle: the packed route leaves :func:`_vocab`'s checks to
    the loader, which refuses an empty token or one spelled twice too; on any error the list
    route runs, to rename the first and name the second as it always has."""
    kind = meta.get(_KEY + "model")
    packed = packed_pieces(meta) if kind == "llama" else None
    if packed is not None:
        vocab: _Vocab | None = _Vocab(meta.name, meta.fields[_KEY + "tokens"], packed.types,
                                      None, meta, packed)  # fmt: skip
    else:
        vocab = packed_vocab(meta) if kind == "gemma4" else None
    if vocab is not None:
        try:
            return vocab, builder(vocab)
        except FormatError:
            pass
    vocab = _vocab(meta)
    return vocab, builder(vocab)


def tokenizer_from_gguf(
    source: bytes | str | os.PathLike[str] | IO[bytes], *, name: str | None = None
) -> GGUFTokenizer:
    """The tokenizer of a GGUF file, from its bytes (an upload) or a path (only the
    metadata is read). ``name`` labels the tokenizer and messages (default: the file name).
    Bytes opened before come from the table cache (:mod:`core.formats.gguf_tables`: the
    fast Tokenizer's tables, or a BPE pipeline's)."""
    key = table_cache.key_of(source, max_bytes=gguf_tables.MAX_CACHED_BYTES)
    cached = table_cache.lookup(key, gguf_tables.CODECS, name=name or "model.gguf")
    if cached is not None:
        return cached
    meta = read_gguf_metadata(source, name=name, packed=PACKED_KINDS)
    built = _from_metadata(meta)
    table_cache.keep(key, gguf_tables.CODECS, built)
    return built.tok
