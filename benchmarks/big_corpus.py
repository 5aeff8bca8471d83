"""Big training corpora for benchmarks: copies of docs-en, each with a new lexicon.

    .venv/bin/python benchmarks/big_corpus.py /tmp/big-1G.txt 1G
    .venv/bin/python benchmarks/big_corpus.py /tmp/big-250M.txt 250M --seed 0

Repeating one 41 MB file would be a poor stand-in for a 1 GB corpus: its distinct pre-tokens
would stop growing after the first copy, and counting would only add to the same counts. In a
real big corpus they keep growing with the size. So copy ``k`` of docs-en (``k = 0, 1, ...``)
has its letters enciphered with a permutation of its own (lower case and upper case alike,
case kept; digits, punctuation, spaces and ``<|endoftext|>`` untouched), so every copy brings
a whole new vocabulary of the same shapes: word lengths, document lengths, punctuation and
whitespace are those of the real text. Copy 0 is docs-en itself. The letter ``k`` copies of
a word are, for this corpus, as many new pre-tokens (~144K distinct pre-tokens per copy).

Deterministic: the same size and seed give the same bytes (``random.Random(seed * 1_000_003
+ k)`` draws copy k's permutation). The file is cut after the last whole document that fits.
Written in 1 MB pieces, so this process stays small.

>>> "The cat, 2 cats.".translate(lexicon(1))
'Ozw lxo, 2 lxou.'
"""

from __future__ import annotations

import argparse
import gzip
import random
import string
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "docs-en.txt.gz"
SEPARATOR = "<|endoftext|>"
_UNITS = {"K": 10**3, "M": 10**6, "G": 10**9}


def parse_size(spelling: str) -> int:
    """Bytes from ``250M``, ``1G``, ``2.5G`` or a plain number.

    >>> parse_size("250M"), parse_size("1G"), parse_size("1234")
    (250000000, 1000000000, 1234)
    """
    spelling = spelling.strip().upper().removesuffix("B")
    if spelling and spelling[-1] in _UNITS:
        return int(float(spelling[:-1]) * _UNITS[spelling[-1]])
    return int(spelling)


def lexicon(copy: int, *, seed: int = 0) -> dict[int, int]:
    """The ``str.translate`` table of copy ``copy``: a permutation of a-z applied to both cases
    (copy 0: none, docs-en as it is)."""
    if copy == 0:
        return {}
    letters = list(string.ascii_lowercase)
    random.Random(seed * 1_000_003 + copy).shuffle(letters)
    table = {ord(a): ord(b) for a, b in zip(string.ascii_lowercase, letters)}
    table.update({ord(a.upper()): ord(b.upper()) for a, b in zip(string.ascii_lowercase, letters)})
    return table


def write_corpus(path: str | Path, size: int, *, seed: int = 0, source: Path = CORPUS) -> int:
    """Write ``size`` bytes (at most; cut after a whole document) of enciphered copies of
    ``source`` to ``path``; returns the bytes written."""
    with gzip.open(source, "rt", encoding="utf-8") as fh:
        documents = fh.read().split(SEPARATOR)
    written = 0
    copy = 0
    with open(path, "wb") as out:
        while True:
            table = lexicon(copy, seed=seed)
            piece: list[bytes] = []
            held = 0
            for doc in documents:
                data = (doc.translate(table) if table else doc).encode("utf-8")
                if written + held + len(data) + len(SEPARATOR) > size:
                    out.write(b"".join(piece))
                    return written + held
                piece.append(data + SEPARATOR.encode())
                held += len(piece[-1])
                if held >= 1 << 20:
                    out.write(b"".join(piece))
                    written += held
                    piece, held = [], 0
            out.write(b"".join(piece))
            written += held
            copy += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="the file to write (keep it out of the repository: /tmp/...)")
    parser.add_argument("size", type=parse_size, help="its size: 250M, 1G, 2G, ...")
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args()
    if not CORPUS.is_file():
        sys.exit(f"{CORPUS} not found: the copies are made from it")
    print(f"{ns.path}: {write_corpus(ns.path, ns.size, seed=ns.seed):,} bytes")


if __name__ == "__main__":
    main()
