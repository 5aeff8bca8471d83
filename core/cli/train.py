"""``train CORPUS... --vocab-size N --special-token T --out DIR``: byte-level BPE on text files,
folders, globs or ``hf://datasets/...`` (:mod:`core.train.corpus_sources`), written as the CS336
pickles ``vocab.pkl`` (dict[int, bytes]) and ``merges.pkl`` (list[tuple[bytes, bytes]]), with
progress bars on stderr."""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
from collections.abc import Sequence

from core.cli.progress import PhaseBars
from core.engine.pretokenize import PATTERNS, pattern_name, split_on_specials
from core.errors import PlaygroundError
from core.train import BPETrainer
from core.train.corpus import blank_corpus_problem
from core.train.corpus_readers import CorpusFiles, corpus_texts
from core.train.corpus_sources import find_corpus_files

__all__ = ["corpus_problem", "out_problem", "pattern_argument", "train"]


def corpus_problem(files: CorpusFiles, special_tokens: Sequence[str] = ()) -> str | None:
    """What is wrong with the corpus, said for the command line, or None: files with nothing
    but whitespace besides their special tokens have nothing to learn from. (A missing file,
    a folder without text, ... are refused before: :func:`core.train.corpus_sources.find_corpus_files`.)

    Reads only as far as the first text that is not blank, a file streamed.
    """
    texts = (piece for chunk in corpus_texts(files, special_tokens)
             for piece, special in split_on_specials(chunk, special_tokens) if not special)
    aside = " (special tokens aside)" if special_tokens else ""
    many = len(files.paths) > 1
    name = f"the corpus ({len(files.paths)} files)" if many else f"corpus {files.paths[0]!r}"
    return blank_corpus_problem(texts, name=f"{name}{aside}")


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


def _refused(problem: str, bars: PhaseBars | None) -> int:
    """Say ``problem`` on one line of stderr (after the bars, if any); exit code 2."""
    if bars is not None:
        bars.close()
    print(f"error: {problem}", file=sys.stderr)
    return 2


def train(args: argparse.Namespace) -> int:
    """Run the training the arguments describe; 2 with one line on stderr for bad input."""
    bars = None if args.quiet else PhaseBars()
    pattern = pattern_argument(args.pattern)
    trainer = BPETrainer(
        [],  # the corpus comes below, once the settings are checked: a bad one costs no download
        args.vocab_size,
        args.special_token,
        pattern=pattern,
        num_workers=args.workers,
        errors=args.errors,
        on_progress=bars,
        dask=args.dask,
    )
    try:
        trainer.corpus = find_corpus_files(args.corpus, text_column=args.text_column, on_progress=bars)
        # checked before training, in this order: a bad corpus leaves no new folder behind
        if problem := corpus_problem(trainer.corpus, args.special_token) or out_problem(args.out):
            return _refused(problem, bars)
        vocab, merges = trainer.run()
    finally:
        if bars is not None:
            bars.close()
    if not trainer.corpus_stats.get("distinct_pretokens"):  # a blank corpus was refused above
        raise PlaygroundError(
            f"--pattern {args.pattern!r} matches nothing in {', '.join(map(repr, args.corpus))}, "
            "so there is nothing to merge: give a regex that matches the text (each match is one "
            f"pre-token) or a pattern name: {', '.join(PATTERNS)} (cl100k_base and o200k_base work too)")
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
