"""Command line: ``python -m core train CORPUS --vocab-size N --special-token T --out DIR``.

Writes ``vocab.pkl`` (dict[int, bytes]) and ``merges.pkl`` (list[tuple[bytes, bytes]]), the
CS336 pickles, and shows a progress bar on stderr. The only module of core that prints.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Sequence

from core.corpus import blank_corpus_problem, file_texts
from core.errors import PlaygroundError
from core.pretokenize import PATTERNS
from core.train import BPETrainer


class _ProgressBar:
    """A one-line progress bar on a stream: ``counting [#####-----]  50%``."""

    def __init__(self, stream: object, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self._last = ""
        self._started = time.perf_counter()

    def __call__(self, phase: str, done: int, total: int) -> None:
        frac = done / total if total else 1.0
        filled = int(self.width * frac)
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"{phase:<9} [{bar}] {frac:4.0%}  {time.perf_counter() - self._started:6.1f}s"
        if line != self._last:
            self.stream.write("\r" + line)  # type: ignore[attr-defined]
            self.stream.flush()  # type: ignore[attr-defined]
            self._last = line
        if done >= total:
            self.close()

    def close(self) -> None:
        """End the current bar's line (once), e.g. before an error message."""
        if self._last:
            self.stream.write("\n")  # type: ignore[attr-defined]
            self._last = ""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="Tokenizer Playground command line.")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train a byte-level BPE tokenizer on a UTF-8 text file")
    train.add_argument("corpus", help="path to a UTF-8 text file")
    train.add_argument("--vocab-size", type=int, required=True, help="final vocabulary size (>= 256 + specials)")
    train.add_argument(
        "--special-token", action="append", default=[], metavar="TOKEN", help="a special token; repeat for more"
    )
    train.add_argument("--out", required=True, help="directory to write vocab.pkl and merges.pkl into")
    train.add_argument("--pattern", default="gpt2", help=f"pre-tokenizer: {', '.join(PATTERNS)} or a regex")
    train.add_argument("--workers", type=int, default=1, help="worker processes for counting (default 1)")
    train.add_argument(
        "--errors",
        choices=("strict", "replace"),
        default="strict",
        help="invalid UTF-8: 'strict' stops with the byte offset, 'replace' uses U+FFFD",
    )
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _corpus_problem(path: str) -> str | None:
    """What is wrong with the corpus argument, said for the command line, or None.

    A directory is refused rather than read: which files, in which order, and all of them in
    memory would be guesses; one ``cat`` says it exactly and keeps the file streamed.
    """
    if os.path.isdir(path):
        return (f"corpus {path!r} is a directory: give a text file (to train on several, join "
                f"them first: cat {os.path.join(path, '*.txt')} > corpus.txt)")
    if not os.path.isfile(path):
        return f"corpus file {path!r} not found"
    return blank_corpus_problem(file_texts(path), name=f"corpus {path!r}")


def _out_problem(out: str) -> str | None:
    """Create the ``--out`` folder and check it takes files, or say why not (before training:
    a long training must not end on a folder it cannot write)."""
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as err:
        reason = "it is a file" if os.path.isfile(out) else (err.strerror or str(err)).lower()
        return f"cannot write to --out {out!r} ({reason}): give a folder you can write to"
    return None


def _train(args: argparse.Namespace) -> int:
    bar = None if args.quiet else _ProgressBar(sys.stderr)
    trainer = BPETrainer(
        args.corpus,
        args.vocab_size,
        args.special_token,
        pattern=args.pattern,
        num_workers=args.workers,
        errors=args.errors,
        on_progress=bar,
    )
    # checked before training, in this order: a bad corpus leaves no new folder behind
    if problem := _corpus_problem(args.corpus) or _out_problem(args.out):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        vocab, merges = trainer.run()
    finally:
        if bar is not None:
            bar.close()
    with open(os.path.join(args.out, "vocab.pkl"), "wb") as fh:
        pickle.dump(vocab, fh)
    with open(os.path.join(args.out, "merges.pkl"), "wb") as fh:
        pickle.dump(merges, fh)
    for message in trainer.messages:
        print(message, file=sys.stderr)
    stats = trainer.corpus_stats
    print(
        f"vocab size {len(vocab)} ({len(merges)} merges) from {stats.get('pretokens', 0):,} pre-tokens "
        f"({stats.get('distinct_pretokens', 0):,} distinct); wrote vocab.pkl and merges.pkl to {args.out}"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "train":
            return _train(args)
    except PlaygroundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: {err.strerror or err}: {err.filename or ''}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
