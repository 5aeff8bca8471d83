"""Load untrusted vocab/merges pickles without ever executing code, then check their shape.

A pickle is a small program: its ``GLOBAL`` / ``STACK_GLOBAL`` opcodes import any callable and
``REDUCE`` calls it, which is how ``pickle.load`` of an uploaded file runs ``os.system``. This
module defends in two layers:

1. :func:`scan_pickle` walks the opcode stream with :mod:`pickletools` (parsing only, nothing is
   built) and refuses anything beyond plain data: object construction, persistent IDs,
   out-of-band buffers, and imports other than the two that Python itself writes for ``bytes``
   under protocols 0-2 (``_codecs.encode(str, "latin1")`` and ``bytes()``). It also bounds the
   input size and memo indices (a huge ``LONG_BINPUT`` index makes CPython allocate a memo
   table of that size: a memory bomb in 5 bytes).
2. :class:`RestrictedUnpickler` builds the objects; its ``find_class`` only hands out strict
   stand-ins for those two functions and ``persistent_load`` always refuses.

Then :func:`validate_vocab`, :func:`validate_merges` and :func:`validate_merges_in_vocab` check
the shapes of the CS336 data contract and say what is wrong and where.

>>> import pickle
>>> safe_loads(pickle.dumps({0: b"a"}, protocol=0))
{0: b'a'}
>>> import os
>>> class Evil:
...     def __reduce__(self):
...         return (os.system, ("echo hacked",))
>>> safe_loads(pickle.dumps(Evil()), name="vocab.pkl")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
core.errors.UnsafePickleError: vocab.pkl: refused: the pickle asks for posix.system; ...
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import pickletools
from collections.abc import Callable
from typing import Any

from core.errors import FormatError, UnsafePickleError

#: Default upper bound on a pickle's size. The o200k vocabulary (200k tokens) pickles to about
#: 3 MB and its merges to about 4 MB, so this leaves a wide margin.
MAX_PICKLE_BYTES = 64 * 1024 * 1024

_PLAIN_DATA = "a vocab/merges pickle only holds dicts, lists, tuples, ints and bytes"

# Opcodes that only build plain data (or manage the stack/memo). Everything else is refused.
_ALLOWED_OPCODES = frozenset(
    {
        "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "MEMOIZE",
        "PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET",
        "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
        "STRING", "BINSTRING", "SHORT_BINSTRING",
        "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
        "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
        "NONE", "NEWTRUE", "NEWFALSE", "FLOAT", "BINFLOAT",
        "EMPTY_LIST", "APPEND", "APPENDS", "LIST",
        "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
        "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
        "EMPTY_SET", "ADDITEMS", "FROZENSET",
        # REDUCE calls whatever callable is on the stack; the only callables that can get there
        # are the stand-ins from RestrictedUnpickler.find_class (imports are checked below).
        "REDUCE",
    }
)  # fmt: skip

_IMPORT_OPCODES = frozenset({"GLOBAL", "STACK_GLOBAL", "INST"})

# Opcodes with a plain-language reason, for the error message.
_REFUSED_REASONS = {
    "OBJ": "builds an object of an arbitrary class",
    "NEWOBJ": "builds an object of an arbitrary class",
    "NEWOBJ_EX": "builds an object of an arbitrary class",
    "BUILD": "sets an object's state (calls __setstate__)",
    "EXT1": "imports a callable through the copyreg extension registry",
    "EXT2": "imports a callable through the copyreg extension registry",
    "EXT4": "imports a callable through the copyreg extension registry",
    "PERSID": "asks for a persistent object",
    "BINPERSID": "asks for a persistent object",
    "NEXT_BUFFER": "asks for an out-of-band buffer",
    "READONLY_BUFFER": "asks for an out-of-band buffer",
}

# Opcodes that push a str (the STRING family too: RestrictedUnpickler decodes them as ASCII).
_STRING_OPCODES = frozenset(
    {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
     "STRING", "BINSTRING", "SHORT_BINSTRING"}
)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Safe stand-ins for the only imports Python writes for plain bytes (protocols 0-2)
# ---------------------------------------------------------------------------------------------


def _latin1_encode(text: object, encoding: object = "utf-8") -> bytes:
    """Stand-in for ``_codecs.encode``: Python pickles ``b"ab"`` as ``encode("ab", "latin1")``."""
    if not isinstance(text, str) or encoding != "latin1":
        raise UnsafePickleError(
            f"refused: the pickle calls _codecs.encode with unexpected arguments; {_PLAIN_DATA}"
        )
    return text.encode("latin-1")


def _empty_bytes(*args: object) -> bytes:
    """Stand-in for ``bytes``: Python pickles ``b""`` as ``bytes()`` under protocols 0-2."""
    if args:
        raise UnsafePickleError(
            f"refused: the pickle calls bytes() with arguments; {_PLAIN_DATA}"
        )
    return b""


_SAFE_GLOBALS: dict[tuple[str, str], Callable[..., bytes]] = {
    ("_codecs", "encode"): _latin1_encode,
    ("codecs", "encode"): _latin1_encode,
    ("__builtin__", "bytes"): _empty_bytes,
    ("builtins", "bytes"): _empty_bytes,
}


def _refuse_global(module: str, name: str) -> UnsafePickleError:
    # Name the Python 3 callable (protocols 0-2 spell builtins.eval as __builtin__.eval).
    module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    return UnsafePickleError(f"refused: the pickle asks for {module}.{name}; {_PLAIN_DATA}")


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that cannot import anything except two strict stand-ins for ``bytes``."""

    def find_class(self, module: str, name: str) -> Any:  # pickle's API
        safe = _SAFE_GLOBALS.get((module, name))
        if safe is None:
            raise _refuse_global(module, name)
        return safe

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError(f"refused: the pickle asks for a persistent object; {_PLAIN_DATA}")


# ---------------------------------------------------------------------------------------------
# Opcode scan
# ---------------------------------------------------------------------------------------------


def scan_pickle(data: bytes, *, max_bytes: int = MAX_PICKLE_BYTES) -> None:
    """Refuse a pickle that does more than describe plain data, without building anything.

    Raises :class:`UnsafePickleError` naming the import or opcode, or :class:`FormatError`
    when the bytes are not a pickle at all.

    >>> scan_pickle(b"cposix\\nsystem\\n(S'ls'\\ntR.")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.UnsafePickleError: refused: the pickle asks for posix.system; ...
    """
    if len(data) > max_bytes:
        raise FormatError(
            f"the file is {len(data):,} bytes, over the {max_bytes:,}-byte limit for a "
            "vocab/merges pickle; check that it is the right file"
        )
    if not data:
        raise FormatError("the file is empty; expected a pickle of a vocab dict or merges list")
    # Follow the top of the stack so STACK_GLOBAL's module and name can be checked and named:
    # ``strings`` holds the last one or two values pushed, while they are known strings.
    strings: list[str] = []
    memo: dict[int, object] = {}
    last: object = None
    n_ops = 0
    arg: Any  # an opcode's argument: an int for the memo opcodes, a str for the string ones
    try:
        for opcode, arg, _pos in pickletools.genops(io.BytesIO(data)):
            n_ops += 1
            op = opcode.name
            if op == "STACK_GLOBAL":
                if len(strings) < 2:
                    raise UnsafePickleError(
                        "refused: the pickle uses opcode STACK_GLOBAL on a module and name "
                        f"that are not two plain strings; {_PLAIN_DATA}"
                    )
                module, name = strings
                if (module, name) not in _SAFE_GLOBALS:
                    raise _refuse_global(module, name)
            elif op in _IMPORT_OPCODES:
                module, _, name = str(arg).partition(" ")
                if (module, name) not in _SAFE_GLOBALS:
                    raise _refuse_global(module, name)
            elif op not in _ALLOWED_OPCODES:
                reason = _REFUSED_REASONS.get(op, "is not plain data")
                raise UnsafePickleError(
                    f"refused: the pickle uses opcode {op}, which {reason}; {_PLAIN_DATA}"
                )
            if op in _STRING_OPCODES:
                last = str(arg)
                strings = [*strings[-1:], last]
            elif op in ("GET", "BINGET", "LONG_BINGET"):
                last = memo.get(int(arg))
                strings = [*strings[-1:], last] if isinstance(last, str) else []
            elif op == "MEMOIZE":
                memo[len(memo)] = last
            elif op in ("PUT", "BINPUT", "LONG_BINPUT"):
                # subtle: CPython sizes its memo table by the largest index it sees, so a
                # single LONG_BINPUT 4294967295 asks for a 32 GiB table. Real pickles number
                # memo entries 0, 1, 2, ... so an index beyond the opcode count is hostile.
                if int(arg) > n_ops:
                    raise UnsafePickleError(
                        f"refused: the pickle uses memo index {int(arg):,}, far beyond its size "
                        f"(a memory bomb); {_PLAIN_DATA}"
                    )
                memo[int(arg)] = last
            elif op != "FRAME":
                # subtle: every other opcode changes the top of the stack (POP, TUPLE2, DUP,
                # ...), so earlier strings can no longer be a STACK_GLOBAL's operands. Without
                # this, "builtins" "eval" "_codecs" "encode" POP POP STACK_GLOBAL passed as
                # _codecs.encode. (FRAME may come between a module and its name.)
                last = None
                strings = []
    except UnsafePickleError:
        raise
    except Exception as err:  # noqa: BLE001 - pickletools raises ValueError and friends on garbage
        raise FormatError(f"not a valid pickle ({err}); expected a vocab dict or merges list "
                          "saved with pickle.dump") from None


def safe_loads(data: bytes, *, name: str = "pickle", max_bytes: int = MAX_PICKLE_BYTES) -> object:
    """Unpickle ``data`` holding plain data only; never imports or calls anything else.

    ``name`` (a file name) prefixes every error message.
    """
    try:
        scan_pickle(data, max_bytes=max_bytes)
        try:
            return RestrictedUnpickler(io.BytesIO(data)).load()
        except FormatError:
            raise
        except Exception as err:  # noqa: BLE001 - a crafted pickle can raise anything here
            raise FormatError(
                f"not a valid pickle ({type(err).__name__}: {err}); expected a vocab dict or "
                "merges list saved with pickle.dump"
            ) from None
    except FormatError as err:
        raise type(err)(f"{name}: {err}") from None


# ---------------------------------------------------------------------------------------------
# Shape validation
# ---------------------------------------------------------------------------------------------


def _show(value: object, limit: int = 40) -> str:
    """A short, non-recursive description of a loaded value for error messages."""
    if isinstance(value, (bytes, bytearray, str, int, float, bool)) or value is None:
        text = repr(value)
        return text if len(text) <= limit else text[: limit - 3] + "..."
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"


def validate_vocab(obj: object, *, name: str = "vocab.pkl") -> dict[int, bytes]:
    """Check ``obj`` is a CS336 vocab (``dict[int, bytes]``, IDs >= 0, tokens unique).

    >>> validate_vocab({0: b"a", 1: b"b"})
    {0: b'a', 1: b'b'}
    >>> validate_vocab({0: b"a", 1: b"a"})
    Traceback (most recent call last):
    ...
    core.errors.FormatError: vocab.pkl: IDs 0 and 1 both map to b'a'; every token must appear once
    """
    if not isinstance(obj, dict):
        raise FormatError(
            f"{name}: expected a dict of token ID -> bytes, got {_show(obj)}"
            + ("; is this the merges file?" if isinstance(obj, (list, tuple)) else "")
        )
    if not obj:
        raise FormatError(f"{name}: the vocab is empty")
    seen: dict[bytes, int] = {}
    vocab: dict[int, bytes] = {}
    for token_id, token in obj.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool):
            raise FormatError(
                f"{name}: key {_show(token_id)} is not an integer token ID (the vocab maps "
                "int -> bytes)"
            )
        if token_id < 0:
            raise FormatError(f"{name}: token ID {token_id} is negative; IDs start at 0")
        if isinstance(token, bytearray):
            token = bytes(token)
        if not isinstance(token, bytes):
            raise FormatError(
                f"{name}: ID {token_id} maps to {_show(token)}, not bytes"
                + (" (tokens are bytes, e.g. b' the')" if isinstance(token, str) else "")
            )
        if not token:
            raise FormatError(
                f"{name}: ID {token_id} maps to empty bytes; every token has at least one byte"
            )
        if token in seen:
            raise FormatError(
                f"{name}: IDs {seen[token]} and {token_id} both map to {_show(token)}; every "
                "token must appear once"
            )
        seen[token] = token_id
        vocab[token_id] = token
    return vocab


def validate_merges(obj: object, *, name: str = "merges.pkl") -> list[tuple[bytes, bytes]]:
    """Check ``obj`` is a CS336 merges list (pairs of non-empty bytes; tuples or lists).

    >>> validate_merges([[b"a", b"b"]])
    [(b'a', b'b')]
    >>> validate_merges([(b"a", b"b", b"c")])
    Traceback (most recent call last):
    ...
    core.errors.FormatError: merges.pkl: merge 0: expected a pair of bytes, got a tuple of 3 items
    """
    if not isinstance(obj, (list, tuple)):
        raise FormatError(
            f"{name}: expected a list of (bytes, bytes) pairs, got {_show(obj)}"
            + ("; is this the vocab file?" if isinstance(obj, dict) else "")
        )
    merges: list[tuple[bytes, bytes]] = []
    seen: dict[tuple[bytes, bytes], int] = {}
    for i, item in enumerate(obj):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise FormatError(f"{name}: merge {i}: expected a pair of bytes, got {_show(item)}")
        left, right = (bytes(p) if isinstance(p, bytearray) else p for p in item)
        for part in (left, right):
            if not isinstance(part, bytes):
                raise FormatError(
                    f"{name}: merge {i}: {_show(part)} is not bytes (merges are pairs like "
                    "(b' t', b'he'))"
                )
            if not part:
                raise FormatError(f"{name}: merge {i}: a part is empty bytes")
        pair = (left, right)
        if pair in seen:
            raise FormatError(f"{name}: merge {i} {pair!r} repeats merge {seen[pair]}")
        seen[pair] = i
        merges.append(pair)
    return merges


def validate_merges_in_vocab(
    vocab: dict[int, bytes],
    merges: list[tuple[bytes, bytes]],
    *,
    name: str = "merges.pkl",
    locate: Callable[[int], str] | None = None,
) -> None:
    """Check every merge's parts and result are tokens of ``vocab``.

    ``locate(i)`` names merge ``i`` in messages (default ``"merge i"``; GPT-2 files use lines).

    >>> validate_merges_in_vocab({0: b"a", 1: b"b"}, [(b"a", b"b")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.FormatError: merges.pkl: merge 0 (b'a', b'b'): b'ab' is not in the vocab; ...
    """
    tokens = set(vocab.values())
    where = locate or (lambda i: f"merge {i}")
    for i, (left, right) in enumerate(merges):
        for token in (left, right, left + right):
            if token not in tokens:
                raise FormatError(
                    f"{name}: {where(i)} ({left!r}, {right!r}): {_show(token)} is not in the "
                    "vocab; are the vocab and merges files from the same tokenizer?"
                )
