"""The command line's tokenizer commands: ``encode``, ``decode``, ``evaluate``, ``inspect``.

Each takes the parsed arguments, writes to stdout and returns the exit code; bad
input raises :class:`core.errors.PlaygroundError`, which :func:`core.cli.main` prints as one
line. Output formats:

- ``encode``: the IDs on one line, separated by spaces; with ``--out PATH``, the corpus
  files' IDs as one array in PATH (:mod:`core.train.encode_corpus`) and a summary line;
- ``decode``: the text exactly (bytes that are not whole UTF-8 characters become U+FFFD,
  as on the Decode page), with no newline added unless stdout is a terminal;
- ``evaluate``: a tab-separated table ``file bytes chars tokens bytes_per_token`` with a
  header line, or with ``--json`` a JSON list of objects with those keys;
- ``inspect``: ``key: value`` lines (``--json``: one object).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

from core.cli.inputs import load_tokenizer, read_text
from core.cli.progress import ByteBar
from core.errors import PlaygroundError

if TYPE_CHECKING:
    from core.interface import TokenizerInterface

__all__ = ["decode", "encode", "encode_files", "evaluate", "inspect", "text_argument"]


def text_argument(text: str) -> str:
    """A TEXT argument as given, or an error when the shell passed bytes that are not UTF-8
    (Python hands them over as lone surrogates).

    >>> text_argument("héllo")
    'héllo'
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise PlaygroundError(f"the TEXT argument is not UTF-8 text (character {err.start + 1}): "
                              "pass it on stdin with --errors replace instead") from None
    return text


def encode(args: argparse.Namespace) -> int:
    """``encode -t TOK [TEXT]``: the IDs on one line (stdin when TEXT is absent); with
    ``--out``, :func:`encode_files`."""
    if args.out is not None:
        return encode_files(args)
    for option, given in _OUT_OPTIONS.items():
        if given(args):
            raise PlaygroundError(f"{option} goes with --out PATH, the file to write corpus files' "
                                  "IDs to: encode -t gpt2 FILE... --out ids.npy")
    if len(args.inputs) > 1:
        raise PlaygroundError(f"encode takes one TEXT, not {len(args.inputs)}: quote it "
                              "(encode -t gpt2 \"Hello world\"), or give files with --out PATH")
    tok, _ = load_tokenizer(args.tokenizer)
    if args.inputs:
        chunks: Any = [text_argument(args.inputs[0])]
    else:
        chunks = read_text(sys.stdin.buffer, source="stdin", errors=args.errors)
    if args.special:  # the model's template wraps the whole text: one encode
        ids = tok.encode("".join(chunks), add_special_tokens=True)
        sys.stdout.write(" ".join(map(str, ids)) + "\n")
        return 0
    from core.explain.evaluate import safe_pieces

    first = True
    for piece, _ in safe_pieces(tok, chunks):  # stdin of any size: a piece at a time
        ids = tok.encode(piece)
        if ids:
            sys.stdout.write(("" if first else " ") + " ".join(map(str, ids)))
            first = False
    sys.stdout.write("\n")
    return 0


#: ``encode``'s options that only ``--out`` takes, and whether each was given.
_OUT_OPTIONS: dict[str, Callable[[argparse.Namespace], bool]] = {
    "--dtype": lambda a: a.dtype != "auto", "--raw": lambda a: a.raw,
    "--workers": lambda a: a.workers != 1, "--separator": lambda a: a.separator is not None,
    "--text-column": lambda a: a.text_column != "text"}


class _PhaseBars:
    """``bars(phase, done, total)``: a :class:`ByteBar` per phase (``downloading``, then
    ``encoding``), made when the phase reports first (its total known then), wiped when done."""

    def __init__(self, *, enabled: bool) -> None:
        self._enabled = enabled
        self._phase = ""
        self._bar: ByteBar | None = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self._phase or self._bar is None:
            self.close()
            self._phase, self._bar = phase, ByteBar(total=total, desc=phase, enabled=self._enabled)
        self._bar(done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def encode_files(args: argparse.Namespace) -> int:
    """``encode -t TOK FILE... --out PATH``: the files' IDs as one array (``.npy``, or raw with
    ``--raw``), documents joined by ``--separator`` (default: the end-of-text token)."""
    from core.train.corpus_sources import find_corpus_files
    from core.train.encode_corpus import choose_dtype, encode_corpus, separator_id

    if not args.inputs:
        raise PlaygroundError("encode --out needs corpus files: encode -t gpt2 FILE... --out ids.npy")
    if args.special:
        raise PlaygroundError("--special adds a model's template around one text; with --out the "
                              "documents are joined by --separator instead: leave --special out")
    tok, _ = load_tokenizer(args.tokenizer)
    dtype = None if args.dtype == "auto" else args.dtype
    choose_dtype(tok.n_vocab, dtype, name=args.tokenizer)  # refused before any download
    separator_id(tok, args.separator)
    bars = _PhaseBars(enabled=not args.quiet)
    try:
        files = find_corpus_files(args.inputs, text_column=args.text_column, on_progress=bars)
        done = encode_corpus(tok, files, args.out, dtype=dtype, raw=args.raw, workers=args.workers,
                             separator=args.separator, errors=args.errors, on_progress=bars)
    finally:
        bars.close()
    many = f"{len(files.paths)} files" if len(files.paths) != 1 else "1 file"
    sys.stdout.write(f"wrote {done.count:,} token IDs ({done.dtype}{', raw' if done.raw else ''}) "
                     f"from {many} ({done.bytes:,} bytes) to {done.path}\n")
    return 0


def _check_in_vocab(tok: TokenizerInterface, ids: list[int]) -> None:
    for position, token_id in enumerate(ids, 1):
        if token_id >= tok.n_vocab or tok.id_to_piece(token_id) == "":
            raise PlaygroundError(
                f"ID {token_id} (item {position}) is not in this tokenizer's vocabulary "
                f"(IDs 0 to {tok.n_vocab - 1:,})")


def decode(args: argparse.Namespace) -> int:
    """``decode -t TOK ID...``: the text of the IDs (stdin when no ID is given)."""
    from core.engine.details import parse_ids

    raw = " ".join(args.ids) if args.ids else "".join(
        read_text(sys.stdin.buffer, source="stdin"))
    ids, problems = parse_ids(raw, max_ids=10**9)
    if problems:
        problem = problems[0]
        raise PlaygroundError(f"{problem.message}: give token IDs as whole numbers, "
                              "e.g. decode -t gpt2 15496 11 995")
    tok, _ = load_tokenizer(args.tokenizer)
    _check_in_vocab(tok, ids)
    text = tok.decode(ids)
    sys.stdout.write(text)
    if sys.stdout.isatty():
        sys.stdout.write("\n")
    return 0


class _CountedReader:
    """A binary stream that counts the bytes read from it: a file's own size, whatever
    ``--errors replace`` turns them into (each bad byte becomes a 3-byte U+FFFD).

    >>> import io
    >>> reader = _CountedReader(io.BytesIO(b"a\\xff")); _ = reader.read(8); reader.count
    2
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.count += len(data)
        return data

    def close(self) -> None:
        self._stream.close()


def _file_chunks(path: str, errors: str) -> tuple[Iterator[str], int | None, _CountedReader]:
    """A FILE argument's text (``-``: stdin), its size if known, and its counted stream
    (the caller closes a file's)."""
    if path == "-":
        stdin = _CountedReader(sys.stdin.buffer)
        return read_text(stdin, source="stdin", errors=errors), None, stdin  # type: ignore[arg-type]
    if os.path.isdir(path):
        raise PlaygroundError(f"{path!r} is a directory: give text files")
    if not os.path.isfile(path):
        raise PlaygroundError(f"file {path!r} not found")
    fh = _CountedReader(open(path, "rb"))  # noqa: SIM115 - closed by the caller once read
    return read_text(fh, source=path, errors=errors), os.path.getsize(path), fh  # type: ignore[arg-type]


def evaluate(args: argparse.Namespace) -> int:
    """``evaluate -t TOK FILE... [--json]``: bytes, chars, tokens and bytes per token."""
    from core.explain.evaluate import evaluate as run

    for path in args.files:  # every file checked before the long work starts
        if path != "-" and not os.path.isfile(path):
            _file_chunks(path, args.errors)
    tok, _ = load_tokenizer(args.tokenizer)
    rows = []
    for path in args.files:
        chunks, size, counted = _file_chunks(path, args.errors)
        bar = ByteBar(total=size, desc=os.path.basename(path), enabled=not args.quiet)
        try:
            stats = run(tok, chunks, name=path, usage=False, on_progress=bar).stats
        finally:
            bar.close()
            if path != "-":  # stdin stays open
                counted.close()
        # the file's bytes, not the text's: --errors replace makes each bad byte 3 bytes
        stats = dataclasses.replace(stats, bytes=counted.count)
        rows.append({"file": path, "bytes": stats.bytes, "chars": stats.chars,
                     "tokens": stats.tokens, "bytes_per_token": stats.bytes_per_token})
    if args.json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False) + "\n")
        return 0
    sys.stdout.write("file\tbytes\tchars\ttokens\tbytes_per_token\n")
    for row in rows:
        sys.stdout.write(f"{row['file']}\t{row['bytes']}\t{row['chars']}\t{row['tokens']}\t"
                     f"{row['bytes_per_token']:.4f}\n")
    return 0


#: ``inspect``'s longest line: a long list or regex is summarised (``--json`` has it whole).
LINE_WIDTH = 200


def _first_few(items: list[str], *, width: int = 120) -> str:
    """Items joined by spaces while they fit in ``width``, then how many more.

    >>> _first_few(['"<a>"', '"<b>"', '"<c>"'], width=12)
    '"<a>" "<b>" ... and 1 more (--json lists all)'
    """
    shown: list[str] = []
    for item in items:
        if shown and len(" ".join([*shown, item])) > width:
            return " ".join(shown) + f" ... and {len(items) - len(shown)} more (--json lists all)"
        shown.append(item)
    return " ".join(shown)


def _clipped(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, saying how long it was.

    >>> _clipped("x" * 10, 40)
    'xxxxxxxxxx'
    >>> _clipped("x" * 100, 40)
    'xx... (100 characters; --json shows all)'
    """
    if len(text) <= width:
        return text
    note = f"... ({len(text):,} characters; --json shows all)"
    return text[:max(0, width - len(note))] + note


def inspect(args: argparse.Namespace) -> int:
    """``inspect -t TOK``: kind, vocab size, special tokens, pattern, source."""
    from core.engine.pretokenize import PATTERNS

    tok, source = load_tokenizer(args.tokenizer)
    details = tok.capabilities.details
    specials = list(tok.special_tokens) if details else None  # type: ignore[attr-defined]
    pattern = tok.pattern if details else None  # type: ignore[attr-defined]
    info = {"name": tok.name, "kind": tok.kind, "vocab_size": tok.n_vocab,
            "special_tokens": specials, "pattern": pattern,
            "pattern_regex": PATTERNS.get(pattern) if pattern else None, "source": source}
    if args.json:
        sys.stdout.write(json.dumps(info, ensure_ascii=False) + "\n")
        return 0
    shown_specials = "(not declared)" if specials is None else (
        f"{len(specials)}: " + _first_few([json.dumps(s, ensure_ascii=False) for s in specials])
        if specials else "none")
    shown_pattern = "(not declared)" if pattern is None else (
        f"{pattern} = {info['pattern_regex']}" if info["pattern_regex"] else pattern)
    for key, value in (("name", tok.name or "-"), ("kind", tok.kind),
                       ("vocab size", f"{tok.n_vocab}"), ("special tokens", shown_specials),
                       ("pattern", shown_pattern), ("source", source)):
        value = _clipped(value, LINE_WIDTH - len(key) - 2)
        sys.stdout.write(f"{key}: {value}\n")
    return 0
