"""``train CORPUS --vocab-size N --special-token T --out DIR``: byte-level BPE on a UTF-8
file, written as the CS336 pickles ``vocab.pkl`` (dict[int, bytes]) and ``merges.pkl``
(list[tuple[bytes, bytes]]), with progress bars on stderr."""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
from collections.abc import Sequence

from core.cli.progress import PhaseBars
from core.corpus import blank_corpus_problem, file_texts
from core.errors import PlaygroundError
from core.pretokenize import PATTERNS, pattern_name, split_on_specials
from core.train import BPETrainer

__all__ = ["corpus_problem", "out_problem", "pattern_argument", "train"]


def corpus_problem(path: str, special_tokens: Sequence[str] = ()) -> str | None:
    """What is wrong with the corpus argument, said for the command line, or None.

    A directory is refused rather than read: which files, in which order, and all of them in
    memory would be guesses; one ``cat`` says it exactly and keeps the file streamed. A file
    with nothing but whitespace besides its special tokens has nothing to learn from.
    """
    if os.path.isdir(path):
        return (f"corpus {path!r} is a directory: give a text file (to train on several, join "
                f"them first: cat {os.path.join(path, '*.txt')} > corpus.txt)")
    if not os.path.isfile(path):
        return f"corpus file {path!r} not found"
    texts = (piece for chunk in file_texts(path)
             for piece, special in split_on_specials(chunk, special_tokens) if not special)
    aside = " (special tokens aside)" if special_tokens else ""
    return blank_corpus_problem(texts, name=f"corpus {path!r}{aside}")


def pattern_argument(spelling: str) -> str:
    """``--pattern``'s value as the trainer takes it: a pattern name in any of the spellings
    ``-t`` uses (``GPT2``, ``cl100k_base``), or else the user's own regex, as given.

    >>> pattern_argument("cl100k_base"), pattern_argument(r"\\p{L}+")
    ('cl100k', '\\\\p{L}+')
    """
    return pattern_name(spelling) or spelling


def out_problem(out: str) -> str | None:
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


def train(args: argparse.Namespace) -> int:
    """Run the training the arguments describe; 2 with one line on stderr for bad input."""
    bars = None if args.quiet else PhaseBars()
    pattern = pattern_argument(args.pattern)
    trainer = BPETrainer(
        args.corpus,
        args.vocab_size,
        args.special_token,
        pattern=pattern,
        num_workers=args.workers,
        errors=args.errors,
        on_progress=bars,
    )
    # checked before training, in this order: a bad corpus leaves no new folder behind
    if problem := corpus_problem(args.corpus, args.special_token) or out_problem(args.out):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        vocab, merges = trainer.run()
    finally:
        if bars is not None:
            bars.close()
    if not trainer.corpus_stats.get("distinct_pretokens"):  # a blank corpus was refused above
        raise PlaygroundError(
            f"--pattern {args.pattern!r} matches nothing in {args.corpus!r}, so there is nothing "
            "to merge: give a regex that matches the text (each match is one pre-token) or a "
            f"pattern name: {', '.join(PATTERNS)} (cl100k_base and o200k_base work too)")
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
