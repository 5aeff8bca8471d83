"""Cutting text at delimiters, as every Hugging Face pre-tokenizer does it: runs, behaviors.

A text is first cut into *runs* ``(start, end, is_delimiter)`` that cover it (the matches of
a pattern and the text between them, or one run per delimiter character); a *behavior* then
says what becomes of each delimiter (dropped, alone, joined to a neighbour). The same
answer is given on a :class:`Piece` (:func:`split_runs`) and on a plain ``str``
(:func:`split_runs_str`, for encoding to IDs only), from one function, :func:`kept_spans`.

>>> runs = char_runs("a-b", "-".__eq__)
>>> runs
[(0, 1, False), (1, 2, True), (2, 3, False)]
>>> split_runs_str("a-b", runs, "merged_with_previous")
['a-', 'b']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from core.engine.regex_compat import compile_held
from core.pipeline.piece import Piece

__all__ = [
    "Behavior",
    "Run",
    "char_runs",
    "flag_runs",
    "kept_spans",
    "split_runs",
    "split_runs_str",
]

#: What to do with the delimiters a pattern finds (Hugging Face's ``SplitDelimiterBehavior``).
Behavior = Literal[
    "removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"
]
Run = tuple[
    int, int, bool
]  # (start, end, is_delimiter): runs that cover a piece's text


def kept_spans(runs: list[Run], behavior: Behavior) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each piece ``behavior`` makes of ``runs`` (empty ones
    included: the callers drop them). With ``"-"`` in ``"the-final--countdown"``:

    ``removed`` → the, final, countdown; ``isolated`` → the, -, final, -, -, countdown;
    ``merged_with_previous`` → the-, final-, -, countdown; ``merged_with_next`` →
    the, -final, -, -countdown; ``contiguous`` → the, -, final, --, countdown.

    >>> kept_spans(char_runs("a--b", "-".__eq__), "contiguous")
    [(0, 1), (1, 3), (3, 4)]
    """
    if behavior == "removed":
        return [(s, e) for s, e, delimiter in runs if not delimiter]
    if behavior == "isolated":
        return [(s, e) for s, e, _ in runs]
    if behavior == "contiguous":
        return _merge(runs, lambda delimiter, prev: delimiter == prev)
    if behavior == "merged_with_previous":
        return _merge(runs, lambda delimiter, prev: delimiter and not prev)
    if behavior == "merged_with_next":
        backwards = _merge(
            [(-e, -s, d) for s, e, d in reversed(runs)],
            lambda delimiter, prev: delimiter and not prev,
        )
        return [(-e, -s) for s, e in reversed(backwards)]
    raise ValueError(f"unknown split behavior {behavior!r}")


def split_runs(piece: Piece, runs: list[Run], behavior: Behavior) -> list[Piece]:
    """Cut ``piece`` at delimiter runs, keeping, dropping or attaching each delimiter as
    ``behavior`` says (see :func:`kept_spans`); never an empty piece.

    >>> p = Piece.of("the-final--countdown")
    >>> [q.text for q in split_runs(p, char_runs(p.text, "-".__eq__), "merged_with_next")]
    ['the', '-final', '-', '-countdown']
    """
    text, spans = piece.text, piece.spans
    return [Piece(text[s:e], spans[s:e]) for s, e in kept_spans(runs, behavior) if e > s]


def split_runs_str(text: str, runs: list[Run], behavior: Behavior) -> list[str]:
    """:func:`split_runs` on a plain ``str``: the same pieces' texts.

    >>> split_runs_str("the-final--countdown", char_runs("the-final--countdown", "-".__eq__),
    ...                "merged_with_next")
    ['the', '-final', '-', '-countdown']
    """
    return [text[s:e] for s, e in kept_spans(runs, behavior) if e > s]


def _merge(
    runs: list[Run], joins: Callable[[bool, bool], bool]
) -> list[tuple[int, int]]:
    """Hugging Face's fold: a run extends the previous piece when ``joins(is_delimiter,
    previous_is_delimiter)``, else starts a new one."""
    out: list[tuple[int, int]] = []
    prev = False
    for start, end, delimiter in runs:
        if joins(delimiter, prev) and out:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
        prev = delimiter
    return out


def char_runs(text: str, is_delimiter: Callable[[str], bool]) -> list[Run]:
    """Runs of ``text`` where every character that ``is_delimiter`` is a run of its own."""
    if not text:
        return [(0, 0, False)]
    runs: list[Run] = []
    last = 0
    for i, ch in enumerate(text):
        if is_delimiter(ch):
            if last < i:
                runs.append((last, i, False))
            runs.append((i, i + 1, True))
            last = i + 1
    if last < len(text):
        runs.append((last, len(text), False))
    return runs


_FLAG_RUN = compile_held("\x01|\x00+")


def flag_runs(flags: str) -> list[Run]:
    """:func:`char_runs` from a string of flags, ``"\\x01"`` for each delimiter character
    and ``"\\x00"`` for the others (``text.translate`` of a table gives one, in C).

    >>> flag_runs("\\x00\\x00\\x01\\x01") == char_runs("ab--", "-".__eq__)
    True
    """
    if not flags:
        return [(0, 0, False)]
    return [(m.start(), m.end(), m.group() == "\x01") for m in _FLAG_RUN.finditer(flags)]
