"""Hugging Face ``tokenizer.json`` for byte-level BPE (the ByteLevel pre-tokenizer and decoder).

What we write loads in Hugging Face ``tokenizers`` and gives the same IDs as our encoder:

- ``model``: ``BPE`` with the vocab and merges spelled through GPT-2's byte map (``"Ġthe"``),
  merges as ``"left right"`` strings (every ``tokenizers`` version reads these; newer ones also
  read ``["left", "right"]`` pairs, which we accept on load). ``ignore_merges`` is false so
  merges decide every split, as in our encoder.
- ``pre_tokenizer``: for the GPT-2 pattern, ``ByteLevel(use_regex=True)`` (HF's built-in regex
  *is* GPT-2's); for any other pattern, ``Sequence[Split(Regex(pattern), "Isolated"),
  ByteLevel(use_regex=False)]`` (the layout HF uses for tiktoken-style models). In both,
  ``add_prefix_space=False``: HF would otherwise prepend a space and shift every ID.
- ``added_tokens``: our special tokens, also present in ``model.vocab`` under their own text
  (subtle: ``tokenizers`` only keeps an added token's ``id`` when the model vocab already holds
  that string; otherwise it assigns a new ID after the vocab).

>>> text = dumps_hf_json({0: b"<|eot|>", 1: b"a", 2: b" ", 3: b" a"}, [(b" ", b"a")], ["<|eot|>"])
>>> loads_hf_json(text)
({0: b'<|eot|>', 1: b'a', 2: b' ', 3: b' a'}, [(b' ', b'a')], ['<|eot|>'], 'gpt2')
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, cast, overload

from core.engine.basics import gc_paused
from core.engine.bytes_unicode import from_gpt2_strs, to_gpt2_str
from core.engine.file_text import parse_json
from core.engine.pretokenize import GPT2_PATTERN, PATTERNS, resolve_pattern
from core.engine.safe_pickle import (
    validate_merges,
    validate_merges_in_vocab,
    validate_vocab,
)
from core.engine.tokenizer import Tokenizer
from core.engine.vocab_index import IdColumns, merge_ids
from core.errors import FormatError, PlaygroundError
from core.formats import table_cache
from core.formats.gpt2_files import decode_mapped_token
from core.formats.table_cache import Tables
from core.pipeline.post_processors import post_processor_from_json

# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _byte_level(*, use_regex: bool) -> dict[str, Any]:
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
            "use_regex": use_regex}  # fmt: skip


_POSSESSIVE_INTERVAL = re.compile(r"(?<!\\)(\{\d+(?:,\d*)?\})\+")


def hf_regex(pattern: str) -> str:
    r"""Our pattern in the regex dialect of ``tokenizers`` (Oniguruma, Ruby syntax).

    subtle: in Ruby syntax ``X{1,3}+`` is not possessive but "``X{1,3}``, one or more times",
    so cl100k's ``\p{N}{1,3}+`` would swallow ``"1000"`` whole. We drop that ``+``: a bounded
    repetition that ends its alternative (as in cl100k) matches the same either way.
    ``?+``, ``*+`` and ``++`` are possessive in both dialects and stay.

    >>> hf_regex(r"\p{N}{1,3}+|a++")
    '\\p{N}{1,3}|a++'
    """
    return _POSSESSIVE_INTERVAL.sub(r"\1", resolve_pattern(pattern))


def _pre_tokenizer(pattern: str) -> dict[str, Any]:
    regex = resolve_pattern(pattern)
    if regex == GPT2_PATTERN:
        return _byte_level(use_regex=True)
    return {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": hf_regex(regex)}, "behavior": "Isolated",
             "invert": False},  # fmt: skip
            _byte_level(use_regex=False),
        ],
    }


def dumps_hf_json(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str] = (),
    *,
    pattern: str = "gpt2",
) -> str:
    """``tokenizer.json`` text for a byte-level BPE (see the module docstring for the layout)."""
    special_ids: dict[int, str] = {}
    by_bytes = {t: i for i, t in vocab.items()}
    for special in special_tokens:
        token_id = by_bytes.get(special.encode("utf-8"))
        if token_id is None:
            raise FormatError(
                f"tokenizer.json: special token {special!r} is not in the vocab; add it to the "
                "vocab before exporting"
            )
        special_ids[token_id] = special
    model_vocab: dict[str, int] = {}
    for token_id, token in sorted(vocab.items()):
        key = special_ids.get(token_id) or to_gpt2_str(token)
        if key in model_vocab:
            other = model_vocab[key]
            ordinary = other if token_id in special_ids else token_id
            raise FormatError(
                f"tokenizer.json: special token {key!r} is spelled like ordinary token ID "
                f"{ordinary} in GPT-2's byte map, so Hugging Face would confuse them; "
                "rename the special token"
            )
        model_vocab[key] = token_id
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}  # fmt: skip
            for i, s in sorted(special_ids.items())
        ],
        "normalizer": None,
        "pre_tokenizer": _pre_tokenizer(pattern),
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},  # fmt: skip
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": model_vocab,
            "merges": [f"{to_gpt2_str(a)} {to_gpt2_str(b)}" for a, b in merges],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=2)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def _pattern_of(pre: object, name: str) -> str:
    """Our pattern (a name when it is a known one) from a ``pre_tokenizer`` section."""
    if not isinstance(pre, dict):
        raise FormatError(
            f"{name}: pre_tokenizer is {pre!r}; a byte-level BPE needs the ByteLevel "
            "pre-tokenizer"
        )
    kind = pre.get("type")
    if kind == "ByteLevel":
        if pre.get("add_prefix_space"):
            raise FormatError(
                f"{name}: pre_tokenizer ByteLevel has add_prefix_space=true (a space is added "
                "before the text); the playground cannot reproduce that, set it to false"
            )
        if pre.get("use_regex", True):
            return "gpt2"
        raise FormatError(
            f"{name}: pre_tokenizer ByteLevel has use_regex=false and no Split before it; "
            "the playground needs a pre-tokenizer pattern"
        )
    if kind == "Sequence":
        steps = pre.get("pretokenizers") or []
        if (
            len(steps) == 2
            and isinstance(steps[0], dict)
            and steps[0].get("type") == "Split"
            and isinstance(steps[0].get("pattern"), dict)
            and "Regex" in steps[0]["pattern"]
            and str(steps[0].get("behavior", "")).lower() == "isolated"
            and not steps[0].get("invert")
            and isinstance(steps[1], dict)
            and steps[1].get("type") == "ByteLevel"
            and not steps[1].get("use_regex", True)
            and not steps[1].get("add_prefix_space")
        ):
            regex = str(steps[0]["pattern"]["Regex"])
            for pattern_name, known in PATTERNS.items():
                if regex in (known, hf_regex(known)):
                    return pattern_name
            return regex
    raise FormatError(
        f"{name}: pre_tokenizer {kind!r} is not supported; expected ByteLevel (use_regex=true, "
        "add_prefix_space=false) or Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)]"
    )


_BYTE_LEVEL_POST = {None, "ByteLevel", "TemplateProcessing", "Sequence"}


def is_byte_level_bpe(data: bytes | str | dict[str, Any]) -> bool:
    """Whether a ``tokenizer.json`` is a plain byte-level BPE that the fast
    :class:`~core.engine.tokenizer.Tokenizer` reproduces exactly: a BPE model with no subword
    prefix or suffix and no byte fallback, no normalizer, the ByteLevel pre-tokenizer (alone
    or after one Split), the ByteLevel decoder, and added tokens without strip options.
    Anything else goes to :mod:`core.pipeline`, which follows every stage.

    >>> is_byte_level_bpe({"model": {"type": "BPE", "vocab": {}, "merges": []},
    ...                    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}})
    True
    >>> is_byte_level_bpe({"model": {"type": "WordPiece", "vocab": {}}})
    False
    """
    try:
        doc = data if isinstance(data, dict) else parse_json(data, "tokenizer.json")
        model = doc["model"]
        _pattern_of(doc.get("pre_tokenizer"), "tokenizer.json")
    except (FormatError, KeyError, TypeError):
        return False
    added = doc.get("added_tokens") or []
    post = doc.get("post_processor")
    decoder = doc.get("decoder")
    return (
        isinstance(model, dict)
        and model.get("type", "BPE") == "BPE"
        and not model.get("continuing_subword_prefix")
        and not model.get("end_of_word_suffix")
        and not model.get("byte_fallback")
        and not model.get("dropout")
        and doc.get("normalizer") is None
        and (decoder is None or (isinstance(decoder, dict) and decoder.get("type") == "ByteLevel"))
        and (post is None or (isinstance(post, dict) and post.get("type") in _BYTE_LEVEL_POST))
        and all(
            isinstance(a, dict) and not (a.get("lstrip") or a.get("rstrip") or a.get("single_word"))
            for a in added
        )
    )


def loads_hf_json(
    data: bytes | str | dict[str, Any], *, name: str = "tokenizer.json"
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[str], str]:
    """Read a byte-level BPE ``tokenizer.json`` (bytes, text or the parsed object); returns
    ``(vocab, merges, special_tokens, pattern)``. Every added token becomes a special token
    (HF matches them before pre-tokenization, as we do)."""
    doc = data if isinstance(data, dict) else parse_json(data, name)
    vocab, pairs, specials, pattern = _read(doc, name)
    return vocab, _merge_bytes(vocab, pairs), specials, pattern


@overload
def _read(
    doc: object, name: str, *, bulk: Literal["tables", "off"] = ...
) -> tuple[dict[int, bytes], list[tuple[int, int, int]], list[str], str]: ...
@overload
def _read(
    doc: object, name: str, *, bulk: Literal["pairs"]
) -> tuple[dict[int, bytes], list[tuple[int, int, int]] | IdColumns, list[str], str]: ...
def _read(
    doc: object, name: str, *, bulk: str = "tables"
) -> tuple[dict[int, bytes], list[tuple[int, int, int]] | IdColumns, list[str], str]:
    """:func:`loads_hf_json` on the parsed document, with the merges as ``(left, right,
    merged)`` IDs. ``bulk="pairs"``: when the bulk path reads the file, the merges are
    :class:`IdColumns`, not yet checked for a pair listed twice (the caller checks: a
    Tokenizer indexes them anyway); ``bulk="off"``: only the careful path."""
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise FormatError(f"{name}: no \"model\" section; is this a Hugging Face tokenizer.json?")
    model = doc["model"]
    if model.get("type", "BPE") != "BPE":
        raise FormatError(
            f"{name}: model type is {model.get('type')!r}; only BPE tokenizers can be loaded"
        )
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise FormatError(
                f"{name}: model.{key} is {model[key]!r}; a byte-level BPE has none"
            )
    normalizer = doc.get("normalizer")
    if normalizer is not None:
        kind = normalizer.get("type") if isinstance(normalizer, dict) else normalizer
        raise FormatError(
            f"{name}: normalizer {kind!r} "
            "changes the text before BPE; the playground only loads tokenizers without one"
        )
    pattern = _pattern_of(doc.get("pre_tokenizer"), name)

    added: dict[int, str] = {}
    for i, entry in enumerate(doc.get("added_tokens") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not (
            isinstance(entry.get("id"), int)
        ):
            raise FormatError(f"{name}: added_tokens[{i}] needs a string content and an int id")
        added[entry["id"]] = entry["content"]
    # the bulk path checks everything at once and gives up (None) at the first doubt; the
    # careful path below then finds the problem and names it
    reader = {"tables": _fast_tables, "pairs": _fast_pairs}.get(bulk)
    fast = reader and reader(model.get("vocab"), model.get("merges"), added)
    if fast:
        return fast[0], fast[1], [added[i] for i in sorted(added)], pattern

    model_vocab = model.get("vocab")
    if not isinstance(model_vocab, dict):
        raise FormatError(f"{name}: model.vocab must be an object of token -> ID")
    raw: dict[int, bytes] = {}
    for key, token_id in model_vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool):
            raise FormatError(f"{name}: model.vocab[{key!r}] is {token_id!r}, not an int ID")
        if token_id in raw:
            raise FormatError(f"{name}: model.vocab has two tokens with ID {token_id}")
        if token_id in added:
            raw[token_id] = added[token_id].encode("utf-8")
        else:
            raw[token_id] = decode_mapped_token(key, name=name, where=f"model.vocab[{key!r}]")
    for token_id, content in added.items():
        raw.setdefault(token_id, content.encode("utf-8"))
    vocab = validate_vocab(raw, name=name)

    merges_raw = model.get("merges")
    if not isinstance(merges_raw, list):
        raise FormatError(f"{name}: model.merges must be a list")
    pairs: list[tuple[bytes, bytes]] = []
    for i, item in enumerate(merges_raw):
        parts = item.split(" ") if isinstance(item, str) else item
        if not isinstance(parts, list) or len(parts) != 2 or not all(
            isinstance(p, str) and p for p in parts
        ):
            raise FormatError(
                f"{name}: model.merges[{i}] is {item!r}; expected \"left right\" or "
                "[\"left\", \"right\"]"
            )
        where = f"model.merges[{i}]"
        pairs.append(
            (
                decode_mapped_token(parts[0], name=name, where=where),
                decode_mapped_token(parts[1], name=name, where=where),
            )
        )
    merges = validate_merges(pairs, name=name)
    validate_merges_in_vocab(vocab, merges, name=name, locate=lambda i: f"model.merges[{i}]")
    by_bytes = {token: i for i, token in vocab.items()}
    id_merges = [(by_bytes[a], by_bytes[b], by_bytes[a + b]) for a, b in merges]
    return vocab, id_merges, [added[i] for i in sorted(added)], pattern


_count_spaces = operator.methodcaller("count", " ")


def _fast_pairs(
    model_vocab: object, merges_raw: object, added: Mapping[int, str]
) -> tuple[dict[int, bytes], IdColumns] | None:
    """The checks of the careful path but one, done on whole lists at once (a few C-level
    passes instead of a Python loop per character): the vocab, and the merges' left and
    right IDs, or ``None`` when any check fails. Not checked: a pair listed twice.

    >>> _fast_pairs({"a": 0, "Ġ": 1, "Ġa": 2}, ["Ġ a"], {})
    ({0: b'a', 1: b' ', 2: b' a'}, IdColumns(lefts=[1], rights=[0]))
    >>> _fast_pairs({"a": 0, "b": 0}, [], {}) is None   # two tokens share an ID
    True
    """
    if not isinstance(model_vocab, dict) or not isinstance(merges_raw, list) or not model_vocab:
        return None
    keys = list(model_vocab)
    ids = list(model_vocab.values())
    if set(map(type, ids)) != {int} or len(set(ids)) != len(ids) or min(ids) < 0:
        return None
    if any(i.__class__ is not int or i < 0 for i in added) or "" in model_vocab:
        return None
    # an added token's entry in model.vocab (if any) is its text, not in GPT-2's map
    overlap = bool(added) and not added.keys().isdisjoint(ids)
    ordinary = list(map(operator.not_, map(added.__contains__, ids))) if overlap else []
    mapped = list(itertools.compress(keys, ordinary)) if overlap else keys
    mapped_ids = list(itertools.compress(ids, ordinary)) if overlap else ids
    as_bytes = from_gpt2_strs(mapped)
    if as_bytes is None:
        return None
    vocab: dict[int, bytes | None] = dict.fromkeys(ids) if overlap else {}  # (the file's order)
    vocab.update(zip(mapped_ids, as_bytes))
    for token_id, content in added.items():  # (in model.vocab: its placeholder; else after)
        if vocab.get(token_id) is None:
            vocab[token_id] = content.encode("utf-8")
    tokens = set(vocab.values())
    if len(tokens) != len(vocab) or b"" in tokens:
        return None
    if max(vocab) > 2 * len(vocab) + 1024:  # sparse IDs: no list as long as the largest
        return None
    # a merge's parts must be mapped (not added) vocab keys
    by_key = dict(zip(mapped, mapped_ids)) if overlap else model_vocab
    split = merge_ids(merges_raw, by_key)
    if split is not None:
        return vocab, split  # type: ignore[return-value]
    try:
        if set(map(type, merges_raw)) <= {str}:
            # "left right" strings, each with exactly one space: split all at once
            if set(map(_count_spaces, merges_raw)) - {1}:
                return None
            flat = list(map(by_key.__getitem__, " ".join(merges_raw).split(" ")))
        else:
            # ["left", "right"] lists (what newer tokenizers write)
            if set(map(type, merges_raw)) != {list} or set(map(len, merges_raw)) != {2}:
                return None
            flat = list(map(by_key.__getitem__, itertools.chain.from_iterable(merges_raw)))
    except (KeyError, TypeError):
        return None
    return vocab, IdColumns(flat[::2], flat[1::2])  # type: ignore[return-value]


def _fast_tables(
    model_vocab: object, merges_raw: object, added: Mapping[int, str]
) -> tuple[dict[int, bytes], list[tuple[int, int, int]]] | None:
    """:func:`_fast_pairs` with its last check (no pair twice), and the merges as
    ``(left, right, merged)`` IDs, or ``None`` when any check fails.

    >>> _fast_tables({"a": 0, "Ġ": 1, "Ġa": 2}, ["Ġ a"], {})
    ({0: b'a', 1: b' ', 2: b' a'}, [(1, 0, 2)])
    >>> _fast_tables({"a": 0, "Ġ": 1, "Ġa": 2}, ["Ġ a", "Ġ a"], {}) is None   # a pair twice
    True
    """
    fast = _fast_pairs(model_vocab, merges_raw, added)
    if fast is None:
        return None
    vocab, (lefts, rights) = fast
    if len(set(zip(lefts, rights))) != len(lefts):
        return None
    # (a list is faster than the dict; its None gaps are no merge's part: parts are vocab IDs)
    by_id = cast("list[bytes]", list(map(vocab.get, range(max(vocab) + 1))))
    by_token = dict(zip(vocab.values(), vocab.keys()))  # tokens are unique (checked)
    joined = map(bytes.__add__, map(by_id.__getitem__, lefts), map(by_id.__getitem__, rights))
    made = list(map(by_token.get, joined))
    if None in made:
        return None
    return vocab, list(zip(lefts, rights, cast("list[int]", made)))


def _merge_bytes(
    vocab: Mapping[int, bytes], merges: list[tuple[int, int, int]]
) -> list[tuple[bytes, bytes]]:
    """Merges as byte pairs, from ``(left, right, merged)`` IDs."""
    flat = list(itertools.chain.from_iterable(merges))  # (zip(*merges) is slow on 280k)
    if len(flat) != 3 * len(merges):
        raise ValueError("a merge is not three IDs")
    get = vocab.__getitem__
    return list(zip(map(get, flat[::3]), map(get, flat[1::3])))


# ---------------------------------------------------------------------------------------------
# Tokenizer-level wrappers
# ---------------------------------------------------------------------------------------------


def hf_json_tables(doc: dict[str, Any], *, name: str = "tokenizer.json") -> Tables:
    """Everything a byte-level BPE ``tokenizer.json`` gives the Tokenizer, as a cacheable
    :class:`~core.formats.table_cache.Tables` (merges as ``(left, right, merged)`` IDs).

    >>> doc = json.loads(dumps_hf_json({0: b"a", 1: b" ", 2: b" a"}, [(b" ", b"a")]))
    >>> hf_json_tables(doc).merges
    [(1, 0, 2)]
    """
    vocab, merges, specials, pattern = _read(doc, name)
    return Tables(vocab, merges, _meta(doc, specials, pattern))


def _meta(doc: dict[str, Any], specials: list[str], pattern: str) -> dict[str, Any]:
    return {
        "special_tokens": specials, "pattern": pattern,
        "ignore_merges": bool(doc["model"].get("ignore_merges")),
        "post_processor": doc.get("post_processor"),
    }  # fmt: skip


def tokenizer_from_tables(
    tables: Tables, special_tokens: Sequence[str] | None = None, *, name: str = ""
) -> Tokenizer:
    """The :class:`~core.engine.tokenizer.Tokenizer` of :func:`hf_json_tables`'s tables (from a
    file just read, or from the cache, whose content is checked like any input: a bad value
    is a :class:`~core.errors.PlaygroundError`)."""
    merges = tables.merges if tables.columns is None else tables.columns
    return _tokenizer(tables.vocab, merges, tables.meta, special_tokens, name)


def _tokenizer(
    vocab: dict[int, bytes], merges: list[tuple[int, int, int]] | IdColumns,
    meta: dict[str, Any], special_tokens: Sequence[str] | None, name: str,
) -> Tokenizer:  # fmt: skip
    """The merges stay IDs (:meth:`~core.engine.tokenizer.Tokenizer.from_id_merges`), their merged
    IDs looked up again."""
    specials, pattern = meta.get("special_tokens"), meta.get("pattern")
    if not (
        isinstance(specials, list)
        and all(isinstance(x, str) for x in specials)
        and isinstance(pattern, str)
        and isinstance(meta.get("ignore_merges"), bool)
    ):
        raise FormatError("cached tables: bad settings")
    if special_tokens is not None:
        specials = list(special_tokens)
    template = post_processor_from_json(meta.get("post_processor"), _content_lookup(vocab))
    return Tokenizer.from_id_merges(
        vocab, merges, specials, pattern=pattern, name=name, template=template,
        # Llama 3's layout: a pre-token that is a token is taken whole, as tiktoken does
        ignore_merges=meta["ignore_merges"],
    )  # fmt: skip


#: The :mod:`core.formats.table_cache` codec of a byte-level BPE ``tokenizer.json``: what its
#: reader reads are the tables already (:func:`hf_json_tables`); :func:`tokenizer_from_tables`
#: (which takes ``special_tokens``) gives the Tokenizer back.
BYTE_LEVEL: table_cache.Codec[Tables, Tokenizer] = table_cache.Codec(
    "hf-json-byte-level-bpe", 1, to_tables=lambda tables: tables, from_tables=tokenizer_from_tables
)


def tokenizer_from_hf_json(
    data: bytes | str | dict[str, Any],
    special_tokens: Sequence[str] | None = None,
    *,
    name: str = "",
    file_name: str = "tokenizer.json",
    source: bytes | None = None,
) -> Tokenizer:
    """A :class:`~core.engine.tokenizer.Tokenizer` from ``tokenizer.json`` (bytes, text or the
    parsed object, which is then read as it is: the file is parsed once per load); the
    pattern and special tokens come from the file unless ``special_tokens`` is given.
    ``source``: the file's bytes, to keep its tables in the cache (:data:`BYTE_LEVEL`)."""
    doc = data if isinstance(data, dict) else parse_json(data, file_name)
    with gc_paused():  # (millions of small objects, none in a cycle)
        vocab, merges, specials, pattern = _read(doc, file_name, bulk="pairs")
        meta = _meta(doc, specials, pattern)
        try:
            tok = _tokenizer(vocab, merges, meta, special_tokens, name)
        except PlaygroundError:
            _read(doc, file_name, bulk="off")  # a file error the bulk path skips comes first
            raise
        if len(tok.pair_ranks) != len(tok.merged_ids):  # a pair listed twice: the careful
            _read(doc, file_name, bulk="off")  # path names it
        key = None if source is None else table_cache.key_of(source)
        if key is not None:
            if isinstance(merges, IdColumns):  # (else the careful path's, made alike)
                merges = list(zip(*merges, tok.merged_ids))
            table_cache.keep(key, [BYTE_LEVEL], Tables(vocab, merges, meta))
    return tok


def _content_lookup(vocab: Mapping[int, bytes]) -> Callable[[str], int | None]:
    """A token's ID by its text or its GPT-2 spelling, for a hand-written template. Built on
    the first call: a template written with its IDs (the usual case) never needs it, and for
    a 128k vocab the table costs a quarter of a second.

    >>> _content_lookup({5: b" a"})("Ġa")
    5
    """
    table: dict[str, int] = {}

    def lookup(text: str) -> int | None:
        if not table:
            table.update({token.decode("utf-8", "replace"): i for i, token in vocab.items()})
            table.update({to_gpt2_str(token): i for i, token in vocab.items()})
        return table.get(text)

    return lookup


def tokenizer_to_hf_json(tokenizer: Tokenizer) -> dict[str, bytes]:
    """``{"tokenizer.json": ...}`` as UTF-8 bytes."""
    text = dumps_hf_json(
        tokenizer.vocab, tokenizer.merges, list(tokenizer.special_tokens),
        pattern=tokenizer.pattern,
    )  # fmt: skip
    return {"tokenizer.json": text.encode("utf-8")}
