"""GPT-2's ``encoder.json`` + ``vocab.bpe`` (the openai/gpt-2 and picoGPT layout).

Both files spell tokens through GPT-2's byte<->unicode map (:mod:`core.engine.bytes_unicode`), so
``b" the"`` is ``"Ġthe"``. ``encoder.json`` maps token string -> ID; ``vocab.bpe`` starts with
a ``#version: 0.2`` line and then holds one merge per line, the two parts separated by a space
(no part contains a space: the map turns it into ``Ġ``).

>>> enc, bpe = dumps_gpt2({0: b"a", 1: b" ", 2: b" a"}, [(b" ", b"a")])
>>> bpe
'#version: 0.2\\nĠ a\\n'
>>> loads_gpt2(enc, bpe)
({0: b'a', 1: b' ', 2: b' a'}, [(b' ', b'a')], [])
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from core.engine.bytes_unicode import to_gpt2_str, unicode_to_bytes
from core.engine.file_text import as_text, parse_json
from core.engine.safe_pickle import validate_merges_in_vocab, validate_vocab
from core.engine.tokenizer import Tokenizer
from core.errors import FormatError

BPE_HEADER = "#version: 0.2"


def decode_mapped_token(text: str, *, name: str, where: str) -> bytes:
    """Turn a token spelled through GPT-2's byte map back into bytes, naming the file, the
    place and the bad character if any (used for GPT-2 files and Hugging Face tokenizer.json).

    >>> decode_mapped_token("Ġthe", name="vocab.bpe", where="line 2")
    b' the'
    """
    table = unicode_to_bytes()
    out = bytearray()
    for ch in text:
        b = table.get(ch)
        if b is None:
            raise FormatError(
                f"{name}: {where}: {text!r} contains {ch!r} (U+{ord(ch):04X}), which is not "
                "in GPT-2's byte-to-unicode map; is this a byte-level BPE file?"
            )
        out.append(b)
    return bytes(out)


def loads_encoder_json(data: bytes | str, *, name: str = "encoder.json") -> dict[int, bytes]:
    """Read ``encoder.json`` (``{"Ġthe": 262, ...}``) into a vocab ``{262: b" the", ...}``.

    Entries whose characters fall outside the byte map (a special token such as ``"<|a b|>"``
    written verbatim) are kept as their UTF-8 bytes.
    """
    obj = parse_json(data, name)
    if not isinstance(obj, dict):
        raise FormatError(
            f"{name}: expected a JSON object mapping token strings to IDs, got a "
            f"{type(obj).__name__}"
        )
    if isinstance(obj.get("model"), dict):
        raise FormatError(
            f"{name}: this is a Hugging Face tokenizer.json, not GPT-2's encoder.json"
        )
    table = unicode_to_bytes()
    raw: dict[int, bytes] = {}
    names: dict[int, str] = {}
    for token, token_id in obj.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool):
            raise FormatError(f"{name}: token {token!r} has ID {token_id!r}, not an integer")
        if token_id in names:
            raise FormatError(
                f"{name}: tokens {names[token_id]!r} and {token!r} share ID {token_id}"
            )
        names[token_id] = token
        if all(ch in table for ch in token):
            raw[token_id] = bytes(table[ch] for ch in token)
        else:
            # subtle: only a special token can be spelled outside the map; keep it verbatim
            raw[token_id] = token.encode("utf-8")
    return validate_vocab(raw, name=name)


def loads_vocab_bpe(data: bytes | str, *, name: str = "vocab.bpe") -> list[tuple[bytes, bytes]]:
    """Read ``vocab.bpe`` (``#version`` header, then ``"Ġ t"`` per line) into merges."""
    text = as_text(data, name)
    merges: list[tuple[bytes, bytes]] = []
    seen: dict[tuple[bytes, bytes], int] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line or (lineno == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise FormatError(
                f"{name}: line {lineno}: expected two tokens separated by one space "
                f"(like 'Ġ t'), got {line[:40]!r}"
            )
        where = f"line {lineno}"
        pair = (
            decode_mapped_token(parts[0], name=name, where=where),
            decode_mapped_token(parts[1], name=name, where=where),
        )
        if pair in seen:
            raise FormatError(f"{name}: line {lineno}: {line!r} repeats line {seen[pair]}")
        seen[pair] = lineno
        merges.append(pair)
    return merges


def _merge_lines(data: bytes | str) -> list[int]:
    """Line number of each merge in ``vocab.bpe`` (for messages)."""
    text = data if isinstance(data, str) else data.decode("utf-8-sig", errors="replace")
    return [
        n
        for n, line in enumerate(text.split("\n"), start=1)
        if line.rstrip("\r") and not (n == 1 and line.startswith("#version"))
    ]


def infer_special_tokens(
    vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]]
) -> list[str]:
    """Tokens that are neither a single byte nor the result of a merge: special tokens
    (``<|endoftext|>`` in GPT-2), in ID order.

    >>> infer_special_tokens({0: b"a", 1: b"b", 2: b"ab", 3: b"<|eot|>"}, [(b"a", b"b")])
    ['<|eot|>']
    """
    made = {a + b for a, b in merges}
    return [
        t.decode("utf-8", errors="replace")
        for _, t in sorted(vocab.items())
        if len(t) > 1 and t not in made
    ]


def loads_gpt2(
    encoder_json: bytes | str,
    vocab_bpe: bytes | str,
    *,
    encoder_name: str = "encoder.json",
    bpe_name: str = "vocab.bpe",
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], list[str]]:
    """Read both files; returns ``(vocab, merges, special_tokens)`` with the special tokens
    inferred by :func:`infer_special_tokens`."""
    vocab = loads_encoder_json(encoder_json, name=encoder_name)
    merges = loads_vocab_bpe(vocab_bpe, name=bpe_name)
    lines = _merge_lines(vocab_bpe)
    validate_merges_in_vocab(
        vocab, merges, name=bpe_name, locate=lambda i: f"line {lines[i]} (merge {i})"
    )
    return vocab, merges, infer_special_tokens(vocab, merges)


def dumps_encoder_json(vocab: Mapping[int, bytes]) -> str:
    """``encoder.json`` text: byte-mapped token -> ID, in ID order, non-ASCII kept as is."""
    return json.dumps(
        {to_gpt2_str(t): i for i, t in sorted(vocab.items())}, ensure_ascii=False
    )


def dumps_vocab_bpe(merges: Sequence[tuple[bytes, bytes]]) -> str:
    """``vocab.bpe`` text: the version header, then one ``"left right"`` line per merge."""
    lines = [BPE_HEADER] + [f"{to_gpt2_str(a)} {to_gpt2_str(b)}" for a, b in merges]
    return "\n".join(lines) + "\n"


def dumps_gpt2(
    vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]]
) -> tuple[str, str]:
    """``(encoder_json_text, vocab_bpe_text)``; special tokens are ordinary vocab entries here."""
    return dumps_encoder_json(vocab), dumps_vocab_bpe(merges)


# ---------------------------------------------------------------------------------------------
# Tokenizer-level wrappers
# ---------------------------------------------------------------------------------------------


def tokenizer_from_gpt2_files(
    encoder_json: bytes | str,
    vocab_bpe: bytes | str,
    special_tokens: Sequence[str] | None = None,
    *,
    pattern: str = "gpt2",
    name: str = "",
    encoder_name: str = "encoder.json",
    bpe_name: str = "vocab.bpe",
) -> Tokenizer:
    """A :class:`~core.engine.tokenizer.Tokenizer` from GPT-2 files. ``special_tokens=None`` uses the
    inferred ones (``["<|endoftext|>"]`` for GPT-2)."""
    vocab, merges, found = loads_gpt2(
        encoder_json, vocab_bpe, encoder_name=encoder_name, bpe_name=bpe_name
    )
    specials = found if special_tokens is None else list(special_tokens)
    return Tokenizer(vocab, merges, specials, pattern=pattern, name=name)


def tokenizer_to_gpt2_files(tokenizer: Tokenizer) -> dict[str, bytes]:
    """``{"encoder.json": ..., "vocab.bpe": ...}`` as UTF-8 bytes."""
    enc, bpe = dumps_gpt2(tokenizer.vocab, tokenizer.merges)
    return {"encoder.json": enc.encode("utf-8"), "vocab.bpe": bpe.encode("utf-8")}
