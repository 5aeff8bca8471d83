"""The command line: ``python -m core`` or ``tokplay`` (``tokenizer-playground`` too).

::

    tokplay encode -t gpt2 "Hello world"            # 15496 995
    echo -n "Hello" | tokplay encode -t cl100k_base # stdin when TEXT is absent
    tokplay encode -t gpt2 texts/ --out ids.npy --workers 2  # a corpus -> np.load("ids.npy")
    tokplay decode -t gpt2 15496 995                # Hello world
    tokplay evaluate -t o200k_base a.txt b.txt [--json]
    tokplay inspect -t vocab.pkl,merges.pkl
    tokplay train corpus.txt --vocab-size 1000 --special-token "<|endoftext|>" --out out/
    tokplay train texts/ 'more/*.parquet' hf://datasets/ORG/NAME/data --vocab-size 1000 --out out/

``-t`` names a preset, tokenizer file(s) or a Hub ID (:mod:`core.cli.inputs`). Bad input
gives one line on stderr (``error: ...``) and exit code 2, never a traceback. The only part
of core that prints.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from core.engine.pretokenize import PATTERNS
from core.errors import PlaygroundError

__all__ = ["main"]

_TOKENIZER_HELP = ("a preset (gpt2, cl100k_base, o200k_base), tokenizer file(s) "
                   "(tokenizer.json; vocab.pkl,merges.pkl; a folder) or a Hub ID org/name[@rev]")
_ERRORS_HELP = "invalid UTF-8: 'strict' stops with the byte offset, 'replace' uses U+FFFD"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line too (``--help`` shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def _tokenizer_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER", help=_TOKENIZER_HELP)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tokplay", description="Tokenizer Playground command line.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    enc = sub.add_parser("encode", help="text -> token IDs; corpus files -> an ID array (--out)")
    _tokenizer_arg(enc)
    enc.add_argument("inputs", nargs="*", metavar="TEXT | FILE",
                     help="the text (default: read stdin); with --out: corpus files, folders, globs or "
                          "hf://datasets/ORG/NAME/PATH, as train takes them")
    enc.add_argument("--out", metavar="PATH",
                     help="write the files' IDs to PATH as one flat array (a NumPy .npy file; raw "
                          "with --raw), documents joined by the end-of-text token")
    enc.add_argument("--dtype", choices=("auto", "uint16", "uint32"), default="auto",
                     help="--out's integer type (default auto: uint16 when the vocabulary fits)")
    enc.add_argument("--raw", action="store_true",
                     help="--out holds the IDs only, little-endian, no .npy header (np.memmap reads it)")
    enc.add_argument("--workers", type=int, default=1, help="--out: worker processes (default 1)")
    enc.add_argument("--separator", metavar="TOKEN",
                     help="--out: the special token between documents (files, Parquet rows); "
                          "default: the tokenizer's <|endoftext|> (or <|end_of_text|>, </s>)")
    enc.add_argument("--text-column", default="text", metavar="NAME",
                     help="--out: the column of Parquet files that holds the text (default: text)")
    enc.add_argument("--quiet", action="store_true", help="--out: no progress bar")
    enc.add_argument("--special", action=argparse.BooleanOptionalAction, default=False,
                     help="add the model's special tokens (BOS/EOS template), as the Tokenize "
                          "page's switch does (default: --no-special)")
    enc.add_argument("--errors", choices=("strict", "replace"), default="strict", help=_ERRORS_HELP)

    dec = sub.add_parser("decode", help="token IDs -> text")
    _tokenizer_arg(dec)
    dec.add_argument("ids", nargs="*", metavar="ID", help="token IDs (default: read stdin)")

    ev = sub.add_parser("evaluate", help="bytes, characters and tokens per file")
    _tokenizer_arg(ev)
    ev.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files (- for stdin)")
    ev.add_argument("--json", action="store_true", help="a JSON list instead of a table")
    ev.add_argument("--errors", choices=("strict", "replace"), default="strict", help=_ERRORS_HELP)
    ev.add_argument("--quiet", action="store_true", help="no progress bar")

    ins = sub.add_parser("inspect", help="kind, vocab size, special tokens, pattern, source")
    _tokenizer_arg(ins)
    ins.add_argument("--json", action="store_true", help="one JSON object")

    train = sub.add_parser("train", help="train a byte-level BPE tokenizer on UTF-8 text")
    train.add_argument("corpus", nargs="+", metavar="CORPUS",
                       help="text files (.txt; .gz, .zst compressed), Parquet files, folders of them, "
                            "globs ('texts/**/*.txt') or hf://datasets/ORG/NAME/PATH; each file is "
                            "its own document(s)")
    train.add_argument("--text-column", default="text", metavar="NAME",
                       help="the column of Parquet files that holds the text, a document per row "
                            "(default: text)")
    train.add_argument("--vocab-size", type=int, required=True, help="final vocabulary size (>= 256 + specials)")
    train.add_argument(
        "--special-token", action="append", default=[], metavar="TOKEN", help="a special token; repeat for more"
    )
    train.add_argument("--out", required=True, help="directory to write vocab.pkl and merges.pkl into")
    train.add_argument("--pattern", default="gpt2",
                       help=f"pre-tokenizer: a name ({', '.join(PATTERNS)}; any case, cl100k_base and "
                            "o200k_base too) or a regex")
    train.add_argument("--workers", type=int, default=1, help="worker processes for counting (default 1)")
    train.add_argument("--dask", metavar="ADDRESS",
                       help="count on a Dask cluster: its scheduler's address (tcp://HOST:8786), or "
                            "'local' for --workers processes here (pip install 'tokenizer-playground[cluster]')")
    train.add_argument("--errors", choices=("strict", "replace"), default="strict", help=_ERRORS_HELP)
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    from core.cli import commands
    from core.cli.train import train

    table: dict[str, Callable[[argparse.Namespace], int]] = {
        "encode": commands.encode, "decode": commands.decode, "evaluate": commands.evaluate,
        "inspect": commands.inspect, "train": train}
    return table[name]


def _fail(message: str) -> int:
    sys.stdout.flush()
    print(f"error: {' '.join(message.split())}", file=sys.stderr)  # one line, always
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (0 done, 2 bad input, 130 interrupted)."""
    for stream in (sys.stdout, sys.stderr):
        # UTF-8 whatever the locale (a decoded U+FFFD, a file name), never an encoding crash
        stream.reconfigure(encoding="utf-8", errors="backslashreplace")  # type: ignore[union-attr]
    try:
        args = _parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage mistake (2, its one line printed)
        return int(done.code or 0)
    try:
        code = _command(args.command)(args)
        sys.stdout.flush()
        return code
    except PlaygroundError as err:
        return _fail(str(err))
    except OSError as err:
        if isinstance(err, BrokenPipeError):  # `tokplay encode ... | head`: not an error
            import os

            # subtle: the interpreter flushes stdout again at exit; point it at /dev/null
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        return _fail(f"{err.strerror or err}: {err.filename or ''}")
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        return _fail("out of memory: try a smaller input")
    except Exception as err:  # noqa: BLE001 - a bug must still be one line, not a traceback
        return _fail(f"unexpected {type(err).__name__}: {err} (please report it)")
