"""Reading the ``"model"`` section of a Hugging Face ``tokenizer.json``: one reader per
model type, each refusing what it cannot read with a :class:`FormatError` that says why.

>>> model_from_json({"type": "WordPiece", "vocab": {"[UNK]": 0}}).kind
'WordPiece'
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.engine.vocab_index import IdColumns, merge_id_triples
from core.errors import FormatError
from core.pipeline.models.base import Model
from core.pipeline.models.bpe import BPEModel
from core.pipeline.models.unigram_json import unigram_from_json
from core.pipeline.models.wordlevel import WordLevelModel
from core.pipeline.models.wordpiece import WordPieceModel

__all__ = ["bpe_model_from_tables", "model_from_json"]


_SUPPORTED = "BPE, Unigram, WordPiece and WordLevel are"
_count_spaces = operator.methodcaller("count", " ")


def _vocab(obj: dict[str, Any], name: str) -> dict[str, int]:
    vocab = obj.get("vocab")
    if isinstance(vocab, list):
        raise FormatError(
            f"{name}: model.vocab is a list of [token, score] pairs, which only a Unigram "
            "model has; this model needs an object of token -> ID"
        )
    if not isinstance(vocab, dict):
        raise FormatError(f"{name}: model.vocab must be an object of token -> ID")
    if set(map(type, vocab.values())) <= {int} and min(vocab.values(), default=0) >= 0:
        return vocab  # (every ID an int >= 0, checked a whole list at a time)
    for token, token_id in vocab.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise FormatError(
                f"{name}: model.vocab[{token!r}] is {token_id!r}, not a token ID (an "
                "integer >= 0)"
            )
    return vocab


def _merges(obj: dict[str, Any], name: str) -> list[tuple[str, str]]:
    raw = obj.get("merges")
    if not isinstance(raw, list):
        raise FormatError(f"{name}: model.merges must be a list (BPE needs its merges)")
    # the usual files, checked a whole list at a time; anything else goes the careful way,
    # which names the bad entry
    kinds = set(map(type, raw))
    if kinds == {str} and set(map(_count_spaces, raw)) == {1}:
        # (each holds one space: joined by spaces, the halves alternate)
        halves = " ".join(raw).split(" ")
        return list(zip(halves[::2], halves[1::2]))
    if kinds == {list} and set(map(len, raw)) == {2}:
        if set(map(type, itertools.chain.from_iterable(raw))) == {str}:
            return list(map(tuple, raw))
    out: list[tuple[str, str]] = []
    for i, item in enumerate(raw):
        # "left right" (older files; Hugging Face splits on every space, so exactly one
        # must be there) or ["left", "right"]
        parts = item.split(" ") if isinstance(item, str) else item
        if (
            not isinstance(parts, list)
            or len(parts) != 2
            or not all(isinstance(p, str) for p in parts)
        ):
            raise FormatError(
                f'{name}: model.merges[{i}] is {item!r}; expected "left right" or '
                '["left", "right"]'
            )
        out.append((parts[0], parts[1]))
    return out


def _opt_str(
    obj: dict[str, Any], key: str, name: str, default: str | None
) -> str | None:
    value = obj.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise FormatError(
            f"{name}: model.{key} is {value!r}; expected a string or null"
        )
    return value


def _bpe_from_json(obj: dict[str, Any], name: str) -> BPEModel:
    vocab = _vocab(obj, name)
    fast = _plain_merge_ids(obj, vocab)
    if fast is not None:
        lefts, rights, made = fast
        # a pair listed twice keeps its last rank, as BPEModel's own table does
        tables = (dict(zip(zip(lefts, rights), range(len(made)))), dict(enumerate(made)))
        return _bpe_model(obj, vocab, IdColumns(lefts, rights), tables, name)
    return _bpe_model(obj, vocab, _merges(obj, name), None, name)


def _plain_merge_ids(
    obj: dict[str, Any], vocab: dict[str, int]
) -> tuple[list[int], list[int], list[int]] | None:
    """Each merge's two parts and their join as IDs, in one C pass
    (``tokplay_native.tables.merge_ids``) where it was built and the joins are plain (no
    continuing-subword prefix): BPEModel's merge table without a (str, str) tuple per merge
    (it spells them out on first read). None otherwise, or for anything the careful path
    must name (a shape, a part or a join that is not a token)."""
    if obj.get("continuing_subword_prefix"):
        return None
    return merge_id_triples(obj.get("merges"), vocab)


def bpe_model_from_tables(
    settings: dict[str, Any],
    vocab: dict[str, int],
    merges: list[tuple[str, str]] | IdColumns,
    merge_tables: tuple[dict[tuple[int, int], int], Mapping[int, int] | Sequence[int]],
    *,
    name: str = "tokenizer.json",
) -> BPEModel:
    """The BPE model of a ``"model"`` section whose tables were read already (a table
    cache's, :data:`core.formats.hf_tables.BPE`): ``settings`` is the section without
    its vocab and merges, checked as the file's; ``vocab`` (IDs checked by the caller),
    ``merges`` and ``merge_tables`` are BPEModel's (the merged IDs by rank: a dict or a list).

    >>> m = bpe_model_from_tables({"type": "BPE"}, {"a": 0, "b": 1, "ab": 2}, [("a", "b")],
    ...                           ({(0, 1): 0}, {0: 2}))
    >>> m.encode_word("abab")
    [2, 2]
    """
    return _bpe_model(settings, vocab, merges, merge_tables, name)


def _bpe_model(
    obj: dict[str, Any],
    vocab: dict[str, int],
    merges: list[tuple[str, str]] | IdColumns,
    merge_tables: tuple[dict[tuple[int, int], int], Mapping[int, int] | Sequence[int]] | None,
    name: str,
) -> BPEModel:
    dropout = obj.get("dropout")
    if dropout not in (None, 0, 0.0):
        raise FormatError(
            f"{name}: model.dropout is {dropout!r}; BPE dropout picks merges at random, so "
            "no two encodes agree. The playground needs dropout null or 0"
        )
    unk_token = _opt_str(obj, "unk_token", name, None)
    prefix = _opt_str(obj, "continuing_subword_prefix", name, None)
    suffix = _opt_str(obj, "end_of_word_suffix", name, None)
    try:
        return BPEModel(
            vocab,
            merges,
            unk_token=unk_token,
            continuing_subword_prefix=prefix,
            end_of_word_suffix=suffix,
            fuse_unk=bool(obj.get("fuse_unk") or False),
            byte_fallback=bool(obj.get("byte_fallback") or False),
            ignore_merges=bool(obj.get("ignore_merges") or False),
            merge_tables=merge_tables,
        )
    except FormatError as err:  # a bad merge: say which file
        raise FormatError(f"{name}: {err}") from None


def _wordpiece_from_json(obj: dict[str, Any], name: str) -> WordPieceModel:
    limit = obj.get("max_input_chars_per_word", 100)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise FormatError(
            f"{name}: model.max_input_chars_per_word is {limit!r}; expected an integer >= 0"
        )
    return WordPieceModel(
        _vocab(obj, name),
        unk_token=_opt_str(obj, "unk_token", name, "[UNK]") or "[UNK]",
        continuing_subword_prefix=_opt_str(obj, "continuing_subword_prefix", name, "##")
        or "",
        max_input_chars_per_word=limit,
    )


def _wordlevel_from_json(obj: dict[str, Any], name: str) -> WordLevelModel:
    unk = _opt_str(obj, "unk_token", name, "<unk>") or "<unk>"
    return WordLevelModel(_vocab(obj, name), unk_token=unk)


_READERS: dict[str, Callable[[dict[str, Any], str], Model]] = {
    "BPE": _bpe_from_json,
    "WordPiece": _wordpiece_from_json,
    "WordLevel": _wordlevel_from_json,
    "Unigram": unigram_from_json,
}


def _guess_type(obj: dict[str, Any]) -> str:
    """The model type of an old file without ``"type"``, as Hugging Face guesses it (it
    tries BPE, then WordPiece, then WordLevel, then Unigram)."""
    if isinstance(obj.get("vocab"), list):
        return "Unigram"
    if "merges" in obj:
        return "BPE"
    if "continuing_subword_prefix" in obj or "max_input_chars_per_word" in obj:
        return "WordPiece"
    return "WordLevel"


def model_from_json(obj: object, *, name: str = "tokenizer.json") -> Model:
    """The model of a ``tokenizer.json``'s ``"model"`` section.

    >>> m = model_from_json({"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"})
    >>> type(m).__name__
    'WordLevelModel'
    >>> model_from_json({"type": "Unigram", "vocab": [["a", 0.0]]}).kind
    'Unigram'
    >>> model_from_json({"type": "WordPieceX"})
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tokenizer.json: model type 'WordPieceX' is not supported yet; \
BPE, Unigram, WordPiece and WordLevel are
    """
    if not isinstance(obj, dict):
        raise FormatError(
            f'{name}: the "model" section is {type(obj).__name__}, not an object; is '
            "this a Hugging Face tokenizer.json?"
        )
    kind = obj.get("type") or _guess_type(obj)
    reader = _READERS.get(kind) if isinstance(kind, str) else None
    if reader is None:
        raise FormatError(
            f"{name}: model type {kind!r} is not supported yet; {_SUPPORTED}"
        )
    return reader(obj, name)
