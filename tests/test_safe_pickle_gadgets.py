"""Known pickle gadget chains never run through the restricted unpickler (security regressions).

Every gadget below is a hand-assembled pickle whose payload creates a marker file in ``tmp_path``
if it ever runs. For each one:

(a) ``test_gadget_is_real``: an unrestricted unpickler, in a child process, DOES create the
    marker, so the gadget is a real exploit and not a pickle that fails for another reason;
(b) ``test_loaders_refuse``: :func:`safe_loads` and every public loader built on it raise
    :class:`UnsafePickleError` naming what was refused, and the marker never appears;
(c) ``test_scan_refuses_on_its_own`` / ``test_restricted_unpickler_refuses_on_its_own``: each
    of the two layers (the opcode scan, and ``RestrictedUnpickler.find_class``) refuses it
    without the other.

The allowlists are pinned exactly (``test_safe_globals_are_exactly_the_four_stand_ins``,
``test_allowed_opcodes_are_exactly_plain_data``): widening them needs a security review, because
``builtins.getattr`` next to the ``_codecs.encode`` stand-in already reaches ``eval``. The tests
at the end were added for survivors of ``benchmarks/mutation.sh``.
"""

from __future__ import annotations

import codecs
import copyreg
import io
import pickle
import re
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from core.errors import FormatError, UnsafePickleError
from core.formats import (RestrictedUnpickler, dumps_merges, dumps_vocab, load_pickles, load_tokenizer_files, loads_merges, loads_pickles, loads_vocab, safe_loads, scan_pickle)
from core.engine import safe_pickle
from core.engine.safe_pickle import _ALLOWED_OPCODES, _IMPORT_OPCODES, _SAFE_GLOBALS

REPO = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------------
# A tiny pickle assembler
# ---------------------------------------------------------------------------------------------

MARK, TUPLE, REDUCE, DICT, BUILD, POP, STOP = b"(", b"t", b"R", b"d", b"b", b"0", b"."


@dataclass(frozen=True)
class Asm:
    """Writes opcodes by hand: protocol 0 text (``GLOBAL``, ``UNICODE``) or protocol 4
    (``STACK_GLOBAL``, ``BINUNICODE``)."""

    protocol: int

    def text(self, value: str) -> bytes:
        """Push a str."""
        if self.protocol == 0:  # UNICODE: raw-unicode-escape up to the newline
            escaped = value.replace("\\", "\\u005c").replace("\n", "\\u000a")
            return b"V" + escaped.encode("raw-unicode-escape") + b"\n"
        raw = value.encode("utf-8")
        return b"X" + struct.pack("<I", len(raw)) + raw  # BINUNICODE

    def glob(self, module: str, name: str) -> bytes:
        """Push ``module.name`` (what an unpickler's ``find_class`` imports)."""
        if self.protocol == 0:
            return f"c{module}\n{name}\n".encode()  # GLOBAL
        return self.text(module) + self.text(name) + b"\x93"  # STACK_GLOBAL

    def program(self, body: bytes) -> bytes:
        """A whole pickle: PROTO header (protocol 2+), ``body``, STOP."""
        header = b"\x80" + bytes([self.protocol]) if self.protocol >= 2 else b""
        return header + body + STOP


P0, P4 = Asm(0), Asm(4)


def call(func: bytes, *args: bytes) -> bytes:
    """``func(*args)``: MARK, the arguments, TUPLE, REDUCE."""
    return func + MARK + b"".join(args) + TUPLE + REDUCE


def payload(marker: Path) -> str:
    """Python that creates ``marker``; an expression (for eval) and a statement (for exec) that
    evaluates to a str (so ``_codecs.encode(<it>, "latin1")`` succeeds around it)."""
    return f"open({str(marker)!r}, 'w').close() or 'pwned'"


# ---------------------------------------------------------------------------------------------
# The gadgets: one builder each, ``(marker) -> pickle bytes``
# ---------------------------------------------------------------------------------------------


def _eval_via_globals(asm: Asm, getattr_: Callable[[bytes, str], bytes], globals_: bytes,
                      marker: Path) -> bytes:
    """Shared tail: ``globals_.get("__builtins__").get("eval")(payload)`` (an imported module's
    ``__builtins__`` is the builtins dict), with attributes fetched by ``getattr_``."""
    builtins_dict = call(getattr_(globals_, "get"), asm.text("__builtins__"))
    eval_ = call(getattr_(builtins_dict, "get"), asm.text("eval"))
    return asm.program(call(eval_, asm.text(payload(marker))))


def getattr_standin(asm: Asm, marker: Path) -> bytes:
    """``builtins.getattr`` + the allowed ``_codecs.encode`` stand-in (a Python function):
    ``getattr(encode, "__globals__")`` is safe_pickle's module dict, whose ``__builtins__``
    holds ``eval``. This is the review's exploit: it only runs where ``find_class`` hands out
    our stand-in, so (a) proves it against the review's mutant (getattr allowlisted)."""

    def getattr_(obj: bytes, name: str) -> bytes:
        return call(asm.glob("builtins", "getattr"), obj, asm.text(name))

    globals_ = getattr_(asm.glob("_codecs", "encode"), "__globals__")
    return _eval_via_globals(asm, getattr_, globals_, marker)


def getattr_codecs(asm: Asm, marker: Path) -> bytes:
    """``builtins.getattr`` + the real ``_codecs.encode`` (a builtin, so no ``__globals__``):
    ``encode.__self__`` is the ``_codecs`` module, ``lookup("utf-8")`` a ``CodecInfo`` whose
    ``__repr__`` is a Python method, and its ``__globals__`` reach ``eval``."""

    def getattr_(obj: bytes, name: str) -> bytes:
        return call(asm.glob("builtins", "getattr"), obj, asm.text(name))

    codecs_module = getattr_(asm.glob("_codecs", "encode"), "__self__")
    codec_info = call(getattr_(codecs_module, "lookup"), asm.text("utf-8"))
    globals_ = getattr_(getattr_(codec_info, "__repr__"), "__globals__")
    return _eval_via_globals(asm, getattr_, globals_, marker)


def attrgetter_codecs(asm: Asm, marker: Path) -> bytes:
    """``operator.attrgetter`` (dotted paths) walks the same route from ``_codecs.encode``:
    ``attrgetter("__self__.lookup")(encode)("utf-8")``, then
    ``attrgetter("__repr__.__globals__")`` and ``attrgetter("get")`` down to ``eval``."""

    def getattr_(obj: bytes, name: str) -> bytes:
        return call(call(asm.glob("operator", "attrgetter"), asm.text(name)), obj)

    lookup = getattr_(asm.glob("_codecs", "encode"), "__self__.lookup")
    codec_info = call(lookup, asm.text("utf-8"))
    globals_ = getattr_(codec_info, "__repr__.__globals__")
    return _eval_via_globals(asm, getattr_, globals_, marker)


def methodcaller_codecs(asm: Asm, marker: Path) -> bytes:
    """``operator.methodcaller`` does the same with method calls:
    ``methodcaller("__getattribute__", "__self__")(encode)``, ``methodcaller("lookup",
    "utf-8")``, ... ``methodcaller("get", "eval")``, then REDUCE calls ``eval``."""

    def method(obj: bytes, name: str, *args: str) -> bytes:
        caller = call(asm.glob("operator", "methodcaller"), asm.text(name),
                      *(asm.text(a) for a in args))
        return call(caller, obj)

    codecs_module = method(asm.glob("_codecs", "encode"), "__getattribute__", "__self__")
    codec_info = method(codecs_module, "lookup", "utf-8")
    repr_ = method(codec_info, "__getattribute__", "__repr__")
    globals_ = method(repr_, "__getattribute__", "__globals__")
    eval_ = method(method(globals_, "get", "__builtins__"), "get", "eval")
    return asm.program(call(eval_, asm.text(payload(marker))))


def functools_partial(asm: Asm, marker: Path) -> bytes:
    """``functools.partial(exec, payload)()``: a callable built by one REDUCE, called by
    another."""
    bound = call(asm.glob("functools", "partial"), asm.glob("builtins", "exec"),
                 asm.text(payload(marker)))
    return asm.program(call(bound))


def copyreg_reconstructor(asm: Asm, marker: Path, *, module: str = "copyreg") -> bytes:
    """``copyreg._reconstructor(cls, base, state)`` calls ``base.__init__(obj, state)``: with
    ``logging.FileHandler`` that opens (creates) the file named by ``state``. Protocols 0-1
    spell the module ``copy_reg``."""
    handler = asm.glob("logging", "FileHandler")
    return asm.program(
        call(asm.glob(module, "_reconstructor"), handler, handler, asm.text(str(marker)))
    )


# Extension codes that the stdlib leaves free (copyreg's registry is empty by default).
EXT_CODES = {"EXT1": (b"\x82", 0xF1, "<B"), "EXT2": (b"\x83", 0xF1F1, "<H"),
             "EXT4": (b"\x84", 0x7F1F1F1, "<i")}  # fmt: skip


def copyreg_extension(opcode: str, marker: Path) -> bytes:
    """``EXT1``/``EXT2``/``EXT4`` push whatever ``copyreg.add_extension`` registered under a
    code; with ``builtins.exec`` registered, REDUCE calls it."""
    op, code, fmt = EXT_CODES[opcode]
    return P4.program(call(op + struct.pack(fmt, code), P4.text(payload(marker))))


class _EvalLater:
    """Reduces to ``eval(code)``."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce_ex__(self, protocol: object) -> tuple[object, ...]:
        return (eval, (self.code,))


class _EncodeOf:
    """Reduces to the allowed ``_codecs.encode(inner, "latin1")``: the dangerous call hides
    in an argument, one reduce deeper."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __reduce_ex__(self, protocol: object) -> tuple[object, ...]:
        return (codecs.encode, (self.inner, "latin1"))


def nested_reduce(protocol: int, marker: Path) -> bytes:
    """``pickle.dumps`` of an object whose ``__reduce_ex__`` returns the allowed
    ``_codecs.encode`` with another reducible object (``eval(payload)``) as its argument."""
    return pickle.dumps(_EncodeOf(_EvalLater(payload(marker))), protocol=protocol)


def _setstate_tail(asm: Asm, marker: Path) -> bytes:
    """Two BUILDs on an object with a ``__dict__``: the first stores ``__setstate__ = exec`` in
    it, the second finds that ``__setstate__`` and calls it with the payload."""
    hook = MARK + asm.text("__setstate__") + asm.glob("builtins", "exec") + DICT
    return hook + BUILD + asm.text(payload(marker)) + BUILD


def build_setstate(asm: Asm, marker: Path) -> bytes:
    """``BUILD``/``__setstate__``: ``types.SimpleNamespace()`` (by REDUCE), then the two-BUILD
    ``__setstate__ = exec`` chain."""
    return asm.program(call(asm.glob("types", "SimpleNamespace")) + _setstate_tail(asm, marker))


def newobj_setstate(asm: Asm, marker: Path) -> bytes:
    """``NEWOBJ``: ``SimpleNamespace.__new__(SimpleNamespace)``, then the two-BUILD chain."""
    new = asm.glob("types", "SimpleNamespace") + b")\x81"  # EMPTY_TUPLE NEWOBJ
    return asm.program(new + _setstate_tail(asm, marker))


def newobj_ex_setstate(asm: Asm, marker: Path) -> bytes:
    """``NEWOBJ_EX`` (args and kwargs): the same object, then the two-BUILD chain."""
    new = asm.glob("types", "SimpleNamespace") + b")}\x92"  # EMPTY_TUPLE EMPTY_DICT NEWOBJ_EX
    return asm.program(new + _setstate_tail(asm, marker))


def inst_exec(marker: Path) -> bytes:
    """``INST`` (protocol 0 only): ``(`` args ``ibuiltins\\nexec\\n`` calls ``exec(payload)``
    to "instantiate" it."""
    return P0.program(MARK + P0.text(payload(marker)) + b"ibuiltins\nexec\n")


def obj_exec(asm: Asm, marker: Path) -> bytes:
    """``OBJ``: ``(`` callable args ``o`` calls ``exec(payload)`` the same way."""
    return asm.program(MARK + asm.glob("builtins", "exec") + asm.text(payload(marker)) + b"o")


def persistent_id(opcode: str, marker: Path) -> bytes:
    """``PERSID``/``BINPERSID``: the persistent ID (here: the marker's path) goes to the
    unpickler's ``persistent_load``; what that does is up to the application."""
    if opcode == "PERSID":
        return P0.program(b"P" + str(marker).encode() + b"\n")
    return P4.program(P4.text(str(marker)) + b"Q")


def hidden_by_pop(marker: Path) -> bytes:
    """Scan evasion: push "builtins" "eval", then "_codecs" "encode" and POP them again.
    ``STACK_GLOBAL`` takes the top two stack items, builtins.eval, but the two most recent
    strings read "_codecs" "encode"."""
    t = P4.text
    names = t("builtins") + t("eval") + t("_codecs") + t("encode") + POP + POP + b"\x93"
    return P4.program(call(names, t(payload(marker))))


def hidden_by_binstring(marker: Path) -> bytes:
    """Scan evasion: "_codecs" "encode" as BINUNICODE (then packed into a tuple), while the
    names ``STACK_GLOBAL`` takes are ``SHORT_BINSTRING``s, which unpickle to str too."""
    t = P4.text
    decoy = t("_codecs") + t("encode") + b"\x86"  # TUPLE2
    names = decoy + b"U\x08builtinsU\x04eval" + b"\x93"
    return P4.program(call(names, t(payload(marker))))


def hidden_in_memo(marker: Path) -> bytes:
    """Scan evasion: memo slots 0 and 1 get "builtins" and "eval" through a ``BINPUT`` that
    follows a POP (so the scan cannot tell what the slot holds); ``BINGET`` 0, 1 then push
    them on top of a decoy "_codecs" "encode"."""
    t = P4.text
    memo = t("builtins") + t("x") + POP + b"q\x00" + t("eval") + t("x") + POP + b"q\x01"
    names = memo + t("_codecs") + t("encode") + b"h\x00h\x01" + b"\x93"
    return P4.program(call(names, t(payload(marker))))


@dataclass(frozen=True)
class Gadget:
    """A gadget, what each layer must name when it refuses it, and how (a) proves it."""

    name: str
    build: Callable[[Path], bytes]
    refused: str  # what safe_loads / scan_pickle name
    layer2: str  # what RestrictedUnpickler alone names
    #: how (a) runs it: "plain" pickle.loads; "allow getattr" = safe_loads with getattr
    #: allowlisted (the review's mutant); "ext" registers the extension code first;
    #: "persistent" = an unpickler whose persistent_load trusts the ID
    proof: str = "plain"
    ext: str | None = None  # EXTn: register builtins.exec under its code in the test process


def _both(name: str, builder: Callable[[Asm, Path], bytes], refused: str,
          proof: str = "plain") -> list[Gadget]:
    """The gadget spelled with text ``GLOBAL`` (protocol 0) and with ``STACK_GLOBAL``."""
    return [
        Gadget(f"{name}[GLOBAL]", partial(builder, P0), refused, refused, proof),
        Gadget(f"{name}[STACK_GLOBAL]", partial(builder, P4), refused, refused, proof),
    ]


GADGETS: list[Gadget] = [
    *_both("getattr-stand-in-globals", getattr_standin, "builtins.getattr", "allow getattr"),
    *_both("getattr-codecs-module", getattr_codecs, "builtins.getattr"),
    *_both("operator.attrgetter", attrgetter_codecs, "operator.attrgetter"),
    *_both("operator.methodcaller", methodcaller_codecs, "operator.methodcaller"),
    *_both("functools.partial", functools_partial, "functools.partial"),
    *_both("copyreg._reconstructor", copyreg_reconstructor, "copyreg._reconstructor"),
    Gadget("copy_reg._reconstructor[protocol 0 spelling]",
           partial(copyreg_reconstructor, P0, module="copy_reg"),
           "copyreg._reconstructor", "copyreg._reconstructor"),
    *(Gadget(f"copyreg-extension[{op}]", partial(copyreg_extension, op), f"opcode {op},",
             "builtins.exec", proof="ext", ext=op) for op in EXT_CODES),
    *(Gadget(f"nested-__reduce_ex__[protocol {p}]", partial(nested_reduce, p),
             "builtins.eval", "builtins.eval") for p in range(pickle.HIGHEST_PROTOCOL + 1)),
    *_both("BUILD-__setstate__", build_setstate, "types.SimpleNamespace"),
    Gadget("INST", inst_exec, "builtins.exec", "builtins.exec"),
    *_both("OBJ", obj_exec, "builtins.exec"),
    Gadget("NEWOBJ", partial(newobj_setstate, Asm(2)), "types.SimpleNamespace",
           "types.SimpleNamespace"),
    Gadget("NEWOBJ_EX", partial(newobj_ex_setstate, P4), "types.SimpleNamespace",
           "types.SimpleNamespace"),
    *(Gadget(f"persistent-id[{op}]", partial(persistent_id, op), f"opcode {op},",
             "asks for a persistent object", proof="persistent") for op in ("PERSID", "BINPERSID")),
    Gadget("scan-evasion[POP]", hidden_by_pop, "STACK_GLOBAL", "builtins.eval"),
    Gadget("scan-evasion[SHORT_BINSTRING]", hidden_by_binstring, "builtins.eval", "builtins.eval"),
    Gadget("scan-evasion[memo]", hidden_in_memo, "STACK_GLOBAL", "builtins.eval"),
]  # fmt: skip

each_gadget = pytest.mark.parametrize("gadget", GADGETS, ids=lambda g: g.name)


@contextmanager
def registered(gadget: Gadget) -> Iterator[None]:
    """For an EXTn gadget, register ``builtins.exec`` under its code in this process (so the
    unpickler reaches ``find_class``), and always remove it afterwards."""
    if gadget.ext is None:
        yield
        return
    code = EXT_CODES[gadget.ext][1]
    copyreg.add_extension("builtins", "exec", code)
    try:
        # copyreg's cache would let the C unpickler skip find_class entirely (see below)
        assert code not in copyreg._extension_cache
        yield
    finally:
        copyreg.remove_extension("builtins", "exec", code)


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Path]:
    """Where a payload would write; removed afterwards even when a test fails (pytest keeps
    recent tmp_path folders)."""
    path = tmp_path / "pwned"
    yield path
    path.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------
# (a) Each gadget is real
# ---------------------------------------------------------------------------------------------

_CHILD = """
import copyreg, io, pickle, sys
mode, data = sys.argv[1], sys.stdin.buffer.read()
if mode == "allow getattr":  # the review's mutant: builtins.getattr in the allowlist
    from core.engine import safe_pickle
    safe_pickle._SAFE_GLOBALS[("builtins", "getattr")] = getattr
    load = safe_pickle.safe_loads
elif mode == "persistent":  # an application unpickler that trusts persistent IDs
    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            return open(pid, "w").close()
    load = lambda data: Unpickler(io.BytesIO(data)).load()
else:
    if mode.startswith("ext "):
        copyreg.add_extension("builtins", "exec", int(mode.split()[1]))
    load = pickle.loads
try:
    load(data)
except Exception as err:  # the marker is the evidence; some chains fail after running
    print(type(err).__name__, err)
"""


def run_unrestricted(data: bytes, gadget: Gadget) -> str:
    """Load ``data`` in a child process, the way ``gadget.proof`` says; returns its output."""
    mode = f"ext {EXT_CODES[gadget.ext][1]}" if gadget.ext else gadget.proof
    done = subprocess.run([sys.executable, "-c", _CHILD, mode], input=data, cwd=REPO,
                          capture_output=True, timeout=60, check=True)  # fmt: skip
    return done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")


@each_gadget
def test_gadget_is_real(gadget: Gadget, marker: Path) -> None:
    """(a) Unrestricted unpickling (plain ``pickle.loads`` unless the gadget says otherwise)
    runs the payload: the marker appears."""
    output = run_unrestricted(gadget.build(marker), gadget)
    assert marker.exists(), f"the gadget did not run: {output}"


def test_plain_pickle_refuses_persistent_ids_by_itself(marker: Path) -> None:
    """Plain ``pickle.loads`` has no ``persistent_load``: persistent IDs are only dangerous in
    an unpickler that resolves them, which is why (a) uses one for them."""
    with pytest.raises(pickle.UnpicklingError, match="persistent"):
        pickle.loads(persistent_id("BINPERSID", marker))
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# (b) The loaders refuse it and nothing runs
# ---------------------------------------------------------------------------------------------

VOCAB = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
MERGES = [(b"a", b"b")]


def _loaders(data: bytes, tmp_path: Path) -> list[tuple[str, Callable[[], object]]]:
    """Every public way an untrusted pickle gets in, each with the file name its errors start
    with."""
    vocab, merges = dumps_vocab(VOCAB), dumps_merges(MERGES)
    (tmp_path / "vocab.pkl").write_bytes(data)
    (tmp_path / "merges.pkl").write_bytes(merges)
    return [
        ("up.pkl", lambda: safe_loads(data, name="up.pkl")),
        ("vocab.pkl", lambda: loads_vocab(data)),
        ("merges.pkl", lambda: loads_merges(data)),
        ("merges.pkl", lambda: loads_pickles(vocab, data)),
        ("vocab.pkl", lambda: load_pickles(tmp_path / "vocab.pkl", tmp_path / "merges.pkl")),
        ("vocab.pkl", lambda: load_tokenizer_files({"vocab.pkl": data, "merges.pkl": merges})),
    ]


@each_gadget
def test_loaders_refuse(gadget: Gadget, marker: Path) -> None:
    """(b) ``safe_loads`` and the public loaders raise UnsafePickleError naming what was
    refused, prefixed by the file name; the payload never runs."""
    data = gadget.build(marker)
    with registered(gadget):
        for name, load in _loaders(data, marker.parent):
            with pytest.raises(UnsafePickleError) as info:
                load()
            message = str(info.value)
            assert message.startswith(f"{name}: refused: "), message
            assert gadget.refused in message, message
            assert "only holds dicts, lists, tuples, ints and bytes" in message
            assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# (c) Each layer refuses on its own
# ---------------------------------------------------------------------------------------------


@each_gadget
def test_scan_refuses_on_its_own(gadget: Gadget, marker: Path) -> None:
    """(c) The opcode scan alone refuses the gadget (it builds nothing, so nothing can run)."""
    with pytest.raises(UnsafePickleError, match=re.escape(gadget.refused)):
        scan_pickle(gadget.build(marker))
    assert not marker.exists()


@each_gadget
def test_restricted_unpickler_refuses_on_its_own(gadget: Gadget, marker: Path) -> None:
    """(c) ``RestrictedUnpickler`` without the scan refuses the gadget too: every chain needs
    ``find_class`` (GLOBAL, STACK_GLOBAL, INST, EXTn) or ``persistent_load``, and both refuse.
    """
    data = gadget.build(marker)
    with registered(gadget), pytest.raises(UnsafePickleError, match=re.escape(gadget.layer2)):
        RestrictedUnpickler(io.BytesIO(data)).load()
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# Where only the scan can help (the C unpickler has no per-opcode hook for layer 2)
# ---------------------------------------------------------------------------------------------


def test_extension_cache_cannot_bypass_the_scan(marker: Path) -> None:
    """``EXT1`` when copyreg's extension cache already holds ``exec`` (some earlier plain
    ``pickle.loads`` in the process used the code): the C unpickler then takes ``exec`` from
    the cache WITHOUT calling ``find_class``, so only the scan stands in the way."""
    gadget = next(g for g in GADGETS if g.ext == "EXT1")
    code = EXT_CODES["EXT1"][1]
    with registered(gadget):
        assert pickle.loads(b"\x80\x02\x82" + bytes([code]) + b".") is exec  # fills the cache
        assert copyreg._extension_cache[code] is exec
        with pytest.raises(UnsafePickleError, match="opcode EXT1, which imports a callable"):
            safe_loads(gadget.build(marker))
    assert code not in copyreg._extension_cache  # remove_extension clears it
    assert not marker.exists()


def test_build_cannot_tamper_with_the_stand_ins() -> None:
    """``BUILD`` on the ``_codecs.encode`` stand-in would set attributes of a process-wide
    function (here its ``__defaults__``): no imports are involved, so only the scan refuses."""
    encode = safe_pickle._latin1_encode
    defaults = encode.__defaults__
    state = P4.text("__defaults__") + P4.text("latin1") + b"\x85"  # ("latin1",)
    data = P4.program(P4.glob("_codecs", "encode") + b"N}" + state + b"s\x86" + BUILD)
    try:
        with pytest.raises(UnsafePickleError, match=r"opcode BUILD, which sets an object's state"):
            safe_loads(data)
    finally:
        tampered, encode.__defaults__ = encode.__defaults__, defaults
    assert tampered == defaults


# ---------------------------------------------------------------------------------------------
# The scan follows STACK_GLOBAL's operands exactly as Python writes them
# ---------------------------------------------------------------------------------------------


def test_stack_global_names_survive_memo_and_frames() -> None:
    """Python's pickler may put MEMOIZE and FRAME between a STACK_GLOBAL's module and name
    (a new frame starts before any object), and re-uses memoised names with BINGET: the
    refusal still names the global."""
    module, name = P4.text("posix") + b"\x94", P4.text("system") + b"\x94"
    frames = b"".join(b"\x95" + struct.pack("<Q", len(f)) + f for f in (module, name))
    with pytest.raises(UnsafePickleError, match=r"asks for posix\.system"):
        safe_loads(b"\x80\x04" + frames + b"\x93.")
    with pytest.raises(UnsafePickleError, match=r"asks for posix\.system"):
        scan_pickle(b"\x80\x04" + module + name + b"N0h\x00h\x01\x93.")


def test_stand_ins_stay_strict() -> None:
    """The two stand-ins do exactly what Python's bytes pickling needs, nothing more."""
    assert safe_loads(b"c_codecs\nencode\n(V\xff\nVlatin1\ntR.") == b"\xff"
    assert safe_loads(b"cbuiltins\nbytes\n)R.") == b""
    for bad in (b"c_codecs\nencode\n(Vx\nVutf-8\ntR.", b"c_codecs\nencode\n(I1\nVlatin1\ntR.",
                b"cbuiltins\nbytes\n(I1\ntR."):  # fmt: skip
        with pytest.raises(UnsafePickleError, match=r"refused: the pickle calls"):
            safe_loads(bad)


# ---------------------------------------------------------------------------------------------
# The allowlists, pinned
# ---------------------------------------------------------------------------------------------

REVIEW = (
    "changes the restricted unpickler's allowlist: every import or opcode it lets through can "
    "become a gadget (builtins.getattr next to the _codecs.encode stand-in reaches eval), so a "
    "security reviewer must approve it, then update this test"
)


def test_safe_globals_are_exactly_the_four_stand_ins() -> None:
    """``_SAFE_GLOBALS`` holds the four spellings of the two imports Python writes for bytes
    under protocols 0-2, each mapped to its strict stand-in, and nothing else."""
    expected = {
        ("_codecs", "encode"): safe_pickle._latin1_encode,
        ("codecs", "encode"): safe_pickle._latin1_encode,
        ("__builtin__", "bytes"): safe_pickle._empty_bytes,
        ("builtins", "bytes"): safe_pickle._empty_bytes,
    }
    assert set(_SAFE_GLOBALS) == set(expected), (
        f"added {set(_SAFE_GLOBALS) - set(expected) or 'nothing'}, removed "
        f"{set(expected) - set(_SAFE_GLOBALS) or 'nothing'}: this {REVIEW}"
    )
    for key, stand_in in expected.items():
        assert _SAFE_GLOBALS[key] is stand_in, f"{key} is no longer its stand-in: this {REVIEW}"


def test_allowed_opcodes_are_exactly_plain_data() -> None:
    """``_ALLOWED_OPCODES`` (and the import opcodes checked against ``_SAFE_GLOBALS``) are
    exactly these."""
    expected = frozenset(
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
            "REDUCE",
        }
    )  # fmt: skip
    assert _ALLOWED_OPCODES == expected, (
        f"added {sorted(_ALLOWED_OPCODES - expected) or 'nothing'}, removed "
        f"{sorted(expected - _ALLOWED_OPCODES) or 'nothing'}: this {REVIEW}"
    )
    assert _IMPORT_OPCODES == {"GLOBAL", "STACK_GLOBAL", "INST"}, f"this {REVIEW}"


# ---------------------------------------------------------------------------------------------
# Found by mutation testing (benchmarks/mutation.sh): the scan's bookkeeping and the messages
# ---------------------------------------------------------------------------------------------

PUT_GET_FORMS = {
    "PUT/GET": (lambda i: b"p%d\n" % i, lambda i: b"g%d\n" % i),
    "BINPUT/BINGET": (lambda i: b"q" + bytes([i]), lambda i: b"h" + bytes([i])),
    "LONG_BINPUT/LONG_BINGET": (lambda i: b"r" + struct.pack("<I", i),
                                lambda i: b"j" + struct.pack("<I", i)),
}  # fmt: skip


@pytest.mark.parametrize("form", PUT_GET_FORMS)
def test_stack_global_names_memoised_strings(form: str) -> None:
    """Every PUT and GET spelling is followed: the names stored by PUT and fetched by GET (three
    of them, the last two being the operands) are named in the refusal."""
    put, get = PUT_GET_FORMS[form]
    t = P4.text
    memo = t("x") + put(2) + t("posix") + put(0) + t("system") + put(1) + b"N" + POP
    data = b"\x80\x04" + memo + get(2) + get(0) + get(1) + b"\x93."
    with pytest.raises(UnsafePickleError, match=r"asks for posix\.system"):
        scan_pickle(data)


def test_stack_global_takes_the_last_two_of_three_strings() -> None:
    """``("x", os.system)`` pickles three strings in a row; the operands are the last two."""
    t = P4.text
    with pytest.raises(UnsafePickleError, match=r"asks for posix\.system"):
        scan_pickle(b"\x80\x04" + t("x") + t("posix") + t("system") + b"\x93.")


@pytest.mark.parametrize("form", ["PUT", "BINPUT"])
def test_memo_bomb_in_every_put_spelling(form: str) -> None:
    """The memo-index bound applies to text PUT and BINPUT too (LONG_BINPUT: the other file)."""
    data = b"(p4294967295\n." if form == "PUT" else b"\x80\x02Nq\xff."
    with pytest.raises(UnsafePickleError, match="memory bomb"):
        safe_loads(data)


def test_memo_bound_is_the_opcode_count() -> None:
    """A memo index up to the number of opcodes read so far passes; one more is refused."""
    scan_pickle(b"\x80\x02Nq\x03.")  # PROTO, NONE, BINPUT 3: third opcode
    with pytest.raises(UnsafePickleError, match="memo index 4, far beyond"):
        scan_pickle(b"\x80\x02Nq\x04.")


@pytest.mark.parametrize("protocol", [0, 1])
def test_pickle_starting_with_a_string(protocol: int) -> None:
    """Protocols 0-1 have no PROTO header: a top-level str is the very first opcode."""
    assert safe_loads(pickle.dumps("a", protocol=protocol)) == "a"


def test_opcode_without_a_reason_still_gets_a_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every refused opcode has a reason today; one a future protocol adds falls back to "is
    not plain data"."""
    monkeypatch.delitem(safe_pickle._REFUSED_REASONS, "OBJ")
    with pytest.raises(UnsafePickleError, match=r"opcode OBJ, which is not plain data; a vocab"):
        scan_pickle(b"(o.")


def test_python2_names_are_named_as_python3() -> None:
    """Protocols 0-2 spell ``builtins.range`` as ``__builtin__.xrange``."""
    with pytest.raises(UnsafePickleError, match=r"asks for builtins\.range;"):
        safe_loads(b"c__builtin__\nxrange\n.")


def test_size_limit_boundary_and_message() -> None:
    """A file of exactly ``max_bytes`` loads; one byte less of limit refuses it, saying why."""
    data = dumps_vocab(VOCAB)
    assert safe_loads(data, max_bytes=len(data)) == VOCAB
    with pytest.raises(FormatError) as info:
        safe_loads(data, max_bytes=len(data) - 1)
    assert str(info.value) == (
        f"pickle: the file is {len(data):,} bytes, over the {len(data) - 1:,}-byte limit for a "
        "vocab/merges pickle; check that it is the right file"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "pickle: the file is empty; expected a pickle of a vocab dict or merges list"),
        (b"\xff", ("pickle: not a valid pickle (at position 0, opcode b'\\xff' unknown); "
                   "expected a vocab dict or merges list saved with pickle.dump")),
        # passes the scan (it does not simulate the stack), fails in the unpickler
        (b"\x80\x02N\x86.", ("pickle: not a valid pickle (UnpicklingError: unpickling stack "
                             "underflow); expected a vocab dict or merges list saved with "
                             "pickle.dump")),
    ],
)  # fmt: skip
def test_garbage_messages(data: bytes, message: str) -> None:
    """The exact messages for bytes that are not a pickle (default file name "pickle")."""
    with pytest.raises(FormatError) as info:
        safe_loads(data)
    assert type(info.value) is FormatError
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda: safe_pickle.validate_vocab("x"),
         "vocab.pkl: expected a dict of token ID -> bytes, got 'x'"),
        (lambda: safe_pickle.validate_vocab(object()),
         "vocab.pkl: expected a dict of token ID -> bytes, got a object"),
        (lambda: safe_pickle.validate_vocab({"a": b"a"}),
         "vocab.pkl: key 'a' is not an integer token ID (the vocab maps int -> bytes)"),
        (lambda: safe_pickle.validate_vocab({0: 5}), "vocab.pkl: ID 0 maps to 5, not bytes"),
        (lambda: safe_pickle.validate_vocab({0: "a" * 38}),
         f"vocab.pkl: ID 0 maps to {'a' * 38!r}, not bytes (tokens are bytes, e.g. b' the')"),
        (lambda: safe_pickle.validate_vocab({0: "a" * 39}),
         f"vocab.pkl: ID 0 maps to '{'a' * 36}..., not bytes (tokens are bytes, e.g. b' the')"),
        (lambda: safe_pickle.validate_vocab({0: b"a", 1: b"a"}),
         "vocab.pkl: IDs 0 and 1 both map to b'a'; every token must appear once"),
        (lambda: safe_pickle.validate_merges(5),
         "merges.pkl: expected a list of (bytes, bytes) pairs, got 5"),
        (lambda: safe_pickle.validate_merges([(b"a", 5)]),
         "merges.pkl: merge 0: 5 is not bytes (merges are pairs like (b' t', b'he'))"),
        (lambda: safe_pickle.validate_merges_in_vocab({0: b"a"}, [(b"a", b"b")]),
         ("merges.pkl: merge 0 (b'a', b'b'): b'b' is not in the vocab; are the vocab and "
          "merges files from the same tokenizer?")),
    ],
)  # fmt: skip
def test_shape_messages(check: Callable[[], object], message: str) -> None:
    """The exact shape messages, default file names included, and where hints (and the
    40-character cut of shown values) apply and where they do not."""
    with pytest.raises(FormatError) as info:
        check()
    assert str(info.value) == message


def test_bytearrays_become_bytes() -> None:
    """Protocol 5 pickles a bytearray in-band (BYTEARRAY8): tokens and merge parts come back
    as bytes."""
    vocab = loads_vocab(pickle.dumps({0: bytearray(b"a"), 1: b"b"}, protocol=5))
    merges = loads_merges(pickle.dumps([(bytearray(b"a"), b"b")], protocol=5))
    assert vocab == {0: b"a", 1: b"b"} and merges == [(b"a", b"b")]
    assert {type(t) for t in vocab.values()} == {type(p) for p in merges[0]} == {bytes}
