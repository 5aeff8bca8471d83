"""Small rules every pipeline stage shares: how text becomes UTF-8 bytes, what counts as a
token ID, and pausing the garbage collector around bulk work. Imports nothing from core but
its errors, so any module can use it.

>>> utf8("h\\u00e9"), utf8("\\ud83d")        # a lone surrogate becomes U+FFFD, as in tiktoken
(b'h\\xc3\\xa9', b'\\xef\\xbf\\xbd')
>>> check_id(7, 0)
7
"""

from __future__ import annotations

import contextlib
import gc
import numbers
from collections.abc import Iterator

from core.errors import PlaygroundError

__all__ = ["BULK_TEXT", "check_id", "gc_paused", "utf8"]

#: Characters from which encoding a text is bulk work for :func:`gc_paused`: its new cache
#: entries (a word and its IDs each) make no cycle, and the collections they would set off
#: cost 5-25% of encoding a 50 KB text in a process that holds many objects.
BULK_TEXT = 2048


def check_id(item: object, index: int) -> int:
    """``item`` (at ``index`` of an ID list) as an int token ID, or an error naming it.

    bool is accepted, as an int subclass (tiktoken does the same).
    """
    if not isinstance(item, numbers.Integral):
        raise PlaygroundError(
            f"item {index} of the IDs is {item!r} ({type(item).__name__}), not an integer "
            "token ID; pass a list of ints such as [15496, 11, 995]."
        )
    return int(item)


def utf8(text: str) -> bytes:
    """The UTF-8 bytes of ``text``; lone surrogates (possible in a Python str, never in
    UTF-8) are paired up where they can be and replaced with U+FFFD otherwise."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector inside the block (also as a decorator), for
    bulk work that makes no reference cycles: loading a model's tables, the merge loop.

    subtle: Python runs a full collection each time the objects that survived grow by a
    quarter, and each one walks every container alive: reading Llama 3's tokenizer.json
    makes ~2M objects, and the merge loop keeps hundreds of thousands of lists alive, so a
    third of either went to collections that found nothing. Reference counting still frees
    everything at once; only cycles wait until the block ends. Nested or concurrent blocks
    are safe (only the block that found the collector on turns it back on), and the
    previous state comes back even on an error.

    >>> with gc_paused():
    ...     gc.isenabled()
    False
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
