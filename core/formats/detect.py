"""Guess a tokenizer's format from uploaded files, and write every format for downloads.

>>> identify_files({"vocab.json": b"{}", "merges.txt": b"#version: 0.2\\n"}).kind
'gpt2'
>>> identify_files({"notes.md": b"hello"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
core.errors.FormatError: cannot tell which tokenizer format this file is: notes.md (not a ...
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import posixpath
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.chat.template import with_chat_template
from core.engine import pickles
from core.engine.basics import gc_paused
from core.engine.file_text import parse_json
from core.engine.pretokenize import PATTERNS
from core.engine.safe_pickle import safe_loads
from core.engine.template import Template
from core.engine.tokenizer import Tokenizer
from core.errors import FormatError, PatternNeededError
from core.formats import gpt2_files, hf_json, hf_tables, table_cache, tekken, tiktoken_file
from core.formats.gguf import looks_like_gguf
from core.formats.gguf_vocab import tokenizer_from_gguf
from core.formats.known import known_file
from core.formats.presets import load_preset
from core.formats.tekken import looks_like_tekken
from core.pipeline.hf import pipeline_from_hf_json
from core.pipeline.sentencepiece import looks_like_sentencepiece, sentencepiece_tokenizer
from core.pipeline.tokenizer import PipelineTokenizer

#: What :func:`load_tokenizer_files` returns: the fast byte-level BPE, or a pipeline.
AnyTokenizer = Tokenizer | PipelineTokenizer

#: What a set of files must hold, in words (the uploader's help names the models too).
ACCEPTED = (
    "vocab.pkl + merges.pkl; encoder.json + vocab.bpe (or vocab.json + merges.txt); a "
    ".tiktoken rank file or Meta's Llama 3/4 tokenizer.model; tokenizer.json; a "
    "SentencePiece .model; tekken.json; a GGUF file"
)

# Files that travel with a tokenizer but carry nothing we need: skipped quietly.
_COMPANIONS = frozenset(
    {
        "tokenizer_config.json", "special_tokens_map.json", "config.json",
        "generation_config.json", "added_tokens.json", "readme.md", ".gitattributes",
    }
)  # fmt: skip


@dataclass(frozen=True)
class FileSet:
    """The recognised format and which uploaded file plays which role.

    ``kind`` is ``"pickles"`` (roles ``vocab``/``merges``), ``"gpt2"`` (``encoder``/``bpe``),
    ``"tiktoken"`` (``ranks``), ``"hf"`` or ``"tekken"`` (``tokenizer``), ``"sentencepiece"``
    or ``"gguf"`` (``model``); ``ignored`` lists skipped files: companions such as
    ``tokenizer_config.json``, and ``other_formats``, the files of the same tokenizer in
    formats that lost to ``kind`` (:data:`PRECEDENCE`); ``parsed`` holds the JSON documents
    read while sniffing (file name -> object), so that loading does not parse a big file twice.
    """

    kind: str
    roles: dict[str, str]
    ignored: list[str] = field(default_factory=list)
    parsed: dict[str, object] = field(default_factory=dict, repr=False, compare=False)
    other_formats: list[str] = field(default_factory=list)


def _sniff(name: str, data: bytes, parsed: dict[str, object] | None = None) -> str | None:
    """What one file looks like: pickle, hf, tekken, encoder, bpe, tiktoken, sentencepiece,
    or None. The content decides; a name only settles what the content leaves open (an
    empty or broken file that the loader should then describe)."""
    base = posixpath.basename(name.replace("\\", "/")).lower()
    head = data[:256].lstrip(b"\xef\xbb\xbf").lstrip()
    # JSON first when the very first byte says so: no binary format starts with "{", and a
    # tokenizer.json then never walks through the GGUF and SentencePiece readers
    json_first = data.lstrip(b"\xef\xbb\xbf")[:1] == b"{"
    if not json_first and looks_like_gguf(data):
        return "gguf"
    if not json_first and _is_rank_file(data):
        return "tiktoken"  # a .tiktoken file, or Meta's tokenizer.model (the same format)
    if not json_first and looks_like_sentencepiece(data):
        return "sentencepiece"
    if base.endswith((".pkl", ".pickle")):
        return "pickle"
    if base.endswith(".tiktoken"):
        return "tiktoken"
    if base.endswith(".bpe") or base == "merges.txt":
        return "bpe"
    if base.endswith(".json") or head.startswith(b"{"):
        # opened before: its tables, no JSON to parse
        # (a tokenizer.json's kinds, each building its own kind of tokenizer)
        codecs: tuple[table_cache.Codec[Any, Any], ...] = (hf_json.BYTE_LEVEL, *hf_tables.CODECS)
        tables = table_cache.find(table_cache.key_of(data), codecs)
        if tables is not None:
            if parsed is not None:
                parsed[name] = tables
            return "hf"
        return _sniff_json(data, hf_name=base == "tokenizer.json", keep=(parsed, name))
    if data[:1] == b"\x80" or head[:2] in (b"(d", b"(l", b"}q", b"]q", b"(\n"):
        return "pickle"
    if head.startswith(b"#version"):
        return "bpe"
    first = head.split(b"\n", 1)[0].split()
    if len(first) == 2 and first[1].isdigit():
        return "tiktoken"
    return None


def _sniff_json(
    data: bytes, *, hf_name: bool, keep: tuple[dict[str, object] | None, str] = (None, "")
) -> str | None:
    # subtle: GPT-2's encoder.json has a token called "model", so look at the value's type
    try:
        obj = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return "hf" if hf_name else "encoder"  # the loader will say where the JSON breaks
    parsed, name = keep
    if parsed is not None:
        parsed[name] = obj
    if isinstance(obj, dict) and isinstance(obj.get("model"), dict):
        return "hf"
    if looks_like_tekken(obj):
        return "tekken"
    return "encoder" if isinstance(obj, dict) else None


def _is_rank_file(data: bytes) -> bool:
    """The first lines are ``BASE64 RANK``: a tiktoken rank file, whatever its name."""
    lines = data[:4096].splitlines()[:8]
    if not lines or (len(data) > 4096 and len(lines) < 2):
        return False
    for line in lines if len(data) <= 4096 else lines[:-1]:  # the last may be cut short
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            return False
        try:
            base64.b64decode(parts[0], validate=True)
        except (binascii.Error, ValueError):
            return False
    return True


def _pickle_role(name: str, data: bytes) -> str | None:
    base = posixpath.basename(name).lower()
    if "merge" in base:
        return "merges"
    if "vocab" in base:
        return "vocab"
    # neither word in the name: look at the (safely loaded) top-level type
    try:
        obj = safe_loads(data, name=name)
    except FormatError:
        return None
    return "vocab" if isinstance(obj, dict) else "merges" if isinstance(obj, list) else None


def identify_files(files: Mapping[str, bytes]) -> FileSet:
    """Decide the format of an upload from file names, then content.

    One tokenizer per format: several formats of one tokenizer (what the Train page
    downloads; a Hugging Face repo's ``tokenizer.json`` beside ``vocab.json``) open the first
    of :data:`PRECEDENCE` and list the others in ``ignored`` and ``other_formats``. A
    :class:`FormatError` (one line) names the files to remove when two tokenizers of one
    format (two GGUF files) or stray files are given, and lists what is accepted when the set
    holds no whole tokenizer.
    """
    kinds: dict[str, str | None] = {}
    ignored: list[str] = []
    parsed: dict[str, object] = {}
    for name, data in files.items():
        if _is_companion(name):
            ignored.append(name)
        else:
            kinds[name] = _sniff(name, data, parsed)
    by_kind: dict[str, list[str]] = {}
    for name, kind in kinds.items():
        by_kind.setdefault(kind or "unknown", []).append(name)
    _refuse_two_of_a_kind(by_kind)
    whole = _whole_tokenizers(by_kind, files)
    if not whole:
        described = ", ".join(f"{name} ({_describe(kind)})" for name, kind in kinds.items())
        if not kinds:
            described = "no files" if not ignored else "only " + ", ".join(ignored)
        these = "this file is" if len(kinds) == 1 and not ignored else "these files are"
        raise FormatError(
            f"cannot tell which tokenizer format {these}: {described}. Give one of: {ACCEPTED}"
        )
    kind = next(k for k in PRECEDENCE if k in whole)
    _refuse_strays(kinds, whole, " + ".join(whole[kind].values()))
    others = [n for k in PRECEDENCE if k in whole and k != kind for n in whole[k].values()]
    return FileSet(kind, whole[kind], ignored + others, parsed, other_formats=others)


#: Several formats of one tokenizer in one set (the Train page's downloads; a Hugging Face
#: repo's tokenizer.json beside tokenizer.model or vocab.json + merges.txt): the first one
#: here opens. tokenizer.json names its special tokens, pattern and template; pickles and
#: GPT-2 files name neither (both are guessed); a rank file we do not know needs a pattern.
PRECEDENCE = ("hf", "tekken", "sentencepiece", "gguf", "pickles", "gpt2", "tiktoken")
#: A tokenizer in one file: its kind -> the file's role.
_ONE_FILE = {"hf": "tokenizer", "tekken": "tokenizer", "sentencepiece": "model",
             "gguf": "model", "tiktoken": "ranks"}


def _is_companion(name: str) -> bool:
    """A file that travels with a tokenizer (its config, its chat template) but is no
    tokenizer itself: never a reason to refuse a set."""
    base = posixpath.basename(name.replace("\\", "/")).lower()
    return base in _COMPANIONS or base.endswith(".jinja")  # (.jinja: with_chat_template's)


def _whole_tokenizers(
    by_kind: Mapping[str, list[str]], files: Mapping[str, bytes]
) -> dict[str, dict[str, str]]:
    """Each whole tokenizer in the set (at most one per format): kind -> roles."""
    whole = {kind: {role: by_kind[kind][0]} for kind, role in _ONE_FILE.items() if kind in by_kind}
    if by_kind.get("encoder") and by_kind.get("bpe"):
        whole["gpt2"] = {"encoder": by_kind["encoder"][0], "bpe": by_kind["bpe"][0]}
    if len(by_kind.get("pickle", ())) == 2:
        roles = _pickle_roles(by_kind["pickle"], files)
        if roles is not None:
            whole["pickles"] = roles
    return whole


def _pickle_roles(names: list[str], files: Mapping[str, bytes]) -> dict[str, str] | None:
    """``{"vocab": ..., "merges": ...}`` for two pickles, from their names or content."""
    roles = {n: _pickle_role(n, files[n]) for n in names}
    if sorted(r or "" for r in roles.values()) == ["merges", "vocab"]:
        found = {r: n for n, r in roles.items() if r}
    else:  # one role is clear from the name: the other file plays the other role
        known = [(n, r) for n, r in roles.items() if r]
        if len(known) != 1:
            return None
        (name, role), other = known[0], next(n for n in roles if n != known[0][0])
        found = {role: name, ("merges" if role == "vocab" else "vocab"): other}
    return {"vocab": found["vocab"], "merges": found["merges"]}


def _refuse_two_of_a_kind(by_kind: Mapping[str, list[str]]) -> None:
    """Two tokenizers of one format cannot be told apart: name the files, keep one.

    >>> _refuse_two_of_a_kind({"gguf": ["a.gguf", "b.gguf"]})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.FormatError: a.gguf and b.gguf are 2 GGUF models, one tokenizer each: remove ...
    """
    for kind, names in by_kind.items():
        most = 2 if kind == "pickle" else 1
        if kind == "unknown" or len(names) <= most:
            continue
        listed = ", ".join(names[:-1]) + " and " + names[-1]
        if kind == "pickle":
            raise FormatError(f"{listed} are {len(names)} pickles, and a tokenizer is one "
                              "vocab + merges pair: remove the pickles you do not want to open")
        each = ", one tokenizer each" if kind in _ONE_FILE else ""
        ones = "one" if len(names) == 2 else "ones"
        raise FormatError(f"{listed} are {len(names)} {_PLURAL[kind]}{each}: remove the "
                          f"{ones} you do not want to open")


def _refuse_strays(kinds: Mapping[str, str | None], whole: Mapping[str, dict[str, str]],
                   opened: str) -> None:
    """Files beside whole tokenizers that belong to none: a file we do not read, or half of a
    pair (``vocab.pkl`` without ``merges.pkl``). One line names them."""
    used = {n for roles in whole.values() for n in roles.values()}
    unknown = [n for n, kind in kinds.items() if kind is None]
    halves = [n for n, kind in kinds.items() if kind is not None and n not in used]
    if unknown:
        what = "is not a tokenizer file: remove it" if len(unknown) == 1 else \
            "are not tokenizer files: remove them"
        raise FormatError(f"{', '.join(unknown)} {what} to open {opened}")
    if halves:
        them = "it" if len(halves) == 1 else "them"
        described = ", ".join(f"{n} ({_describe(kinds[n])})" for n in halves)
        raise FormatError(
            f"{described} {'is' if them == 'it' else 'are'} half of a pair (vocab.pkl + "
            f"merges.pkl, encoder.json + vocab.bpe): add the other half, or remove {them} to "
            f"open {opened}")


def files_to_open(files: Mapping[str, bytes], added: Collection[str]) -> dict[str, bytes]:
    """The files to open after a user ``added`` some to ``files`` (an uploader's content):
    the new ones alone when they make a tokenizer, so a second tokenizer replaces the first;
    else all of them (``merges.pkl`` added beside ``vocab.pkl`` completes the pair).

    >>> old = {"a.tiktoken": b"IQ== 0\\n"}
    >>> sorted(files_to_open({**old, "b.tiktoken": b"Ig== 0\\n"}, ["b.tiktoken"]))
    ['b.tiktoken']
    >>> sorted(files_to_open({"vocab.json": b"{}", "merges.txt": b"#version"}, ["merges.txt"]))
    ['merges.txt', 'vocab.json']
    """
    new = {name: files[name] for name in added if name in files}
    if new and len(new) < len(files):
        try:
            identify_files(new)
        except FormatError:
            pass  # not a tokenizer alone: it completes the files already there
        else:
            return new
    return dict(files)


def _describe(kind: str | None) -> str:
    return _DESCRIBE.get(kind or "", "not a tokenizer file")


_DESCRIBE = {
    "pickle": "a pickle",
    "hf": "a Hugging Face tokenizer.json",
    "encoder": "a GPT-2 encoder.json",
    "bpe": "a GPT-2 merges file",
    "tiktoken": "a tiktoken rank file",
    "tekken": "a Mistral Tekken file",
    "sentencepiece": "a SentencePiece model",
    "gguf": "a GGUF model",
}
_PLURAL = {
    "hf": "Hugging Face tokenizer.json files", "encoder": "GPT-2 encoder.json files",
    "bpe": "GPT-2 merges files", "tiktoken": "tiktoken rank files",
    "tekken": "Mistral Tekken files", "sentencepiece": "SentencePiece models",
    "gguf": "GGUF models",
}


@with_chat_template  # tokenizer_config.json / chat_template.jinja: tok.chat_template
@gc_paused()  # parsing and indexing a big file makes millions of objects, none in a cycle
def load_tokenizer_files(
    files: Mapping[str, bytes],
    *,
    special_tokens: Sequence[str] | None = None,
    pattern: str | None = None,
    name: str = "",
    found: FileSet | None = None,
) -> AnyTokenizer:
    """A tokenizer from uploaded files (file name -> bytes), whatever the format.

    Byte-level BPE (pickles, GPT-2 files, rank files, Tekken, a ByteLevel tokenizer.json)
    loads as the fast :class:`~core.engine.tokenizer.Tokenizer`; SentencePiece models and the other
    Hugging Face pipelines (normalizers, Metaspace, WordPiece...) as a
    :class:`~core.pipeline.tokenizer.PipelineTokenizer`. Both encode, decode and explain.

    ``special_tokens``: ``None`` keeps what the files say (Hugging Face files name theirs;
    for pickles and GPT-2 files, tokens that are neither a byte nor a merge result; a known
    rank file gets its model's). ``pattern``: the pre-tokenizer pattern (a name from
    :data:`core.engine.pretokenize.PATTERNS` or a regex); ``None`` uses the file's own, or
    ``"gpt2"`` for pickles and GPT-2 files. A rank file we do not recognise by its SHA-256
    stores none and has no safe default, so it raises :class:`PatternNeededError` unless
    ``pattern`` is given. ``found``: what :func:`identify_files` said of these same files,
    for a caller that asked first (they are not sniffed again).
    """
    found = found or identify_files(files)
    roles = found.roles
    if found.kind == "tiktoken":
        return _load_ranks(files[roles["ranks"]], roles["ranks"], special_tokens, pattern, name)
    if found.kind in _OWN_SETTINGS:  # (they name their own: refused, never ignored)
        _refuse_settings(roles[_ONE_FILE[found.kind]], found.kind, special_tokens, pattern)
    if found.kind == "tekken":
        data = files[roles["tokenizer"]]
        known = known_file(data)
        return tekken.tokenizer_from_tekken(data, name=name or (known.name if known else roles["tokenizer"]))
    if found.kind == "sentencepiece":
        data = files[roles["model"]]
        known = known_file(data)
        return sentencepiece_tokenizer(data, name=name or (known.name if known else roles["model"]))
    if found.kind == "gguf":
        return tokenizer_from_gguf(files[roles["model"]], name=name or roles["model"])
    if found.kind == "pickles":
        vocab, merges = pickles.loads_pickles(
            files[roles["vocab"]], files[roles["merges"]],
            vocab_name=roles["vocab"], merges_name=roles["merges"],
        )  # fmt: skip
        # pickles do not mark special tokens: a token that is neither a byte nor a merge
        # result can only be one (CS336 puts them first)
        if special_tokens is None:
            special_tokens = gpt2_files.infer_special_tokens(vocab, merges)
        return Tokenizer(vocab, merges, special_tokens, pattern=pattern or "gpt2", name=name)
    if found.kind == "gpt2":
        return gpt2_files.tokenizer_from_gpt2_files(
            files[roles["encoder"]], files[roles["bpe"]], special_tokens,
            pattern=pattern or "gpt2", name=name,
            encoder_name=roles["encoder"], bpe_name=roles["bpe"],
        )  # fmt: skip
    tok = _load_hf_json(found, files, special_tokens, name)
    if not isinstance(tok, Tokenizer):
        _refuse_settings(roles["tokenizer"], "pipeline", special_tokens, pattern)
        return tok
    if pattern is None:
        return tok
    return Tokenizer(tok.vocab, tok.merges, tok.special_tokens, pattern=pattern, name=name,
                     ignore_merges=tok.ignore_merges, template=tok.template)  # fmt: skip


#: Formats that name their own special tokens and splitting, and why they cannot take others.
_OWN_SETTINGS = {
    "tekken": "a Mistral Tekken file, which names its own special tokens and pre-tokenizer "
              "pattern",
    "sentencepiece": "a SentencePiece model, which names its own special tokens (control and "
                     "user-defined pieces) and splits text without a regex",
    "gguf": "a GGUF model, which names its own special tokens and pre-tokenizer",
    "pipeline": "a Hugging Face pipeline other than byte-level BPE, whose own stages and "
                "added tokens decide how text splits",
}


def _refuse_settings(file_name: str, kind: str, special_tokens: Sequence[str] | None,
                     pattern: str | None) -> None:
    """Special tokens or a pattern given for a format that keeps its own: one line says why
    they cannot be used, and what to do.

    >>> _refuse_settings("tekken.json", "tekken", None, "gpt2")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.FormatError: tekken.json is a Mistral Tekken file, ...: open it without a pattern of your own
    """
    given = [what for what, value in (("special tokens", special_tokens), ("a pattern", pattern))
             if value is not None]
    if given:
        raise FormatError(f"{file_name} is {_OWN_SETTINGS[kind]}: open it without "
                          f"{' or '.join(given)} of your own")


def _load_hf_json(
    found: FileSet, files: Mapping[str, bytes], special_tokens: Sequence[str] | None, name: str
) -> AnyTokenizer:
    """A tokenizer.json from its cached tables (opened before), else from the document
    sniffing parsed: the file is parsed once per load, and not at all from the cache."""
    file_name = found.roles["tokenizer"]
    data = files[file_name]
    doc: Any = found.parsed.get(file_name, data)  # (a JSON document, as json.loads gives it)
    if isinstance(doc, table_cache.Cached):
        tok = doc.open(name=name or file_name, special_tokens=special_tokens)
        if tok is not None:
            return tok
        doc = parse_json(data, file_name)  # a cache file is untrusted: rebuild from the file
    if not hf_json.is_byte_level_bpe(doc):
        with gc_paused():  # (hundreds of thousands of small objects, none in a cycle)
            shown = name or file_name
            # (a Unigram model's scores from the file's digits, as tokenizers reads them)
            model = hf_tables.unigram_model(doc, data, name=shown)
            pipeline = pipeline_from_hf_json(doc, name=shown, model=model)
            # (BPE's or Unigram's: opened next time from tables)
            table_cache.keep(table_cache.key_of(data), hf_tables.CODECS, (pipeline, doc))
        return pipeline
    return hf_json.tokenizer_from_hf_json(
        doc, special_tokens, name=name or file_name, file_name=file_name, source=data,
    )  # fmt: skip


def _load_ranks(
    data: bytes, file_name: str, special_tokens: Sequence[str] | None, pattern: str | None,
    name: str,
) -> Tokenizer:
    """A rank file: a known one gets its model's pattern, special tokens and BOS; an
    unknown one needs ``pattern``."""
    known = known_file(data)
    if known is not None and known.kind == "preset" and pattern is None and special_tokens is None:
        # a copy: the preset itself is shared by every page (read-only), so it keeps its name
        tok = copy.copy(load_preset(known.preset))
        tok.name = name or known.name
        return tok
    if known is not None and known.specials is not None:
        ranks = tiktoken_file.load_tiktoken_ranks(data, name=file_name)
        specials = known.specials(len(ranks))
        bos = {"template": Template((specials[known.bos],), (), f"{known.bos} $A")} \
            if known.bos else {}  # (OpenAI's put none first)
        return tiktoken_file.tokenizer_from_tiktoken(
            ranks, specials if special_tokens is None else special_tokens,
            pattern=pattern or known.pattern, name=name or known.name, file_name=file_name,
            **bos,
        )  # fmt: skip
    ranks = tiktoken_file.load_tiktoken_ranks(data, name=file_name)  # a broken file says so first
    if pattern is None:
        raise PatternNeededError(
            f"{file_name} is a tiktoken rank file we do not recognise, and a rank file does "
            "not say how its text is split before BPE. Choose its pre-tokenizer pattern: "
            f"{', '.join(PATTERNS)} or your own regex (a wrong one gives wrong IDs)."
        )
    return tiktoken_file.tokenizer_from_tiktoken(
        ranks, special_tokens, pattern=pattern, name=name, file_name=file_name
    )


def tokenizer_to_pickles(tokenizer: Tokenizer) -> dict[str, bytes]:
    """``{"vocab.pkl": ..., "merges.pkl": ...}`` for a tokenizer (special tokens live in the
    vocab; the pre-tokenizer pattern is not stored by this format)."""
    return {
        "vocab.pkl": pickles.dumps_vocab(tokenizer.vocab),
        "merges.pkl": pickles.dumps_merges(tokenizer.merges),
    }


@dataclass(frozen=True)
class ExportFailure:
    """A format :func:`export_all` could not write for this tokenizer, and why.

    >>> ExportFailure("tiktoken rank file", ("toy.tiktoken",), "IDs do not grow").message
    'toy.tiktoken (tiktoken rank file) is not offered: IDs do not grow'
    """

    format: str  # what the user knows it as, e.g. "Hugging Face"
    files: tuple[str, ...]  # the file names it would have written
    reason: str  # the exporter's FormatError message

    @property
    def message(self) -> str:
        """One line for the user: which file is missing from the downloads and why."""
        return f"{' + '.join(self.files)} ({self.format}) is not offered: {self.reason}"


class ExportedFiles(dict[str, bytes]):
    """What :func:`export_all` returns: file name -> bytes (a plain ``dict`` for callers that
    only want the files), plus :attr:`failures`, the formats that could not be written."""

    def __init__(self, files: Mapping[str, bytes] | None = None,
                 failures: Sequence[ExportFailure] = ()) -> None:
        super().__init__(files or {})
        #: One :class:`ExportFailure` per format left out, in export order.
        self.failures: tuple[ExportFailure, ...] = tuple(failures)


def export_all(tokenizer: Tokenizer) -> ExportedFiles:
    """Every format core writes, file name -> bytes, for download buttons.

    Keys: ``vocab.pkl``, ``merges.pkl``, ``encoder.json``, ``vocab.bpe``, ``tokenizer.json``
    and ``<name>.tiktoken``. A format that cannot represent this tokenizer (its exporter
    raises :class:`FormatError`, for example ``tokenizer.json`` when a special token collides
    with the byte map) is left out and listed in the result's ``failures`` with the reason,
    so the page can say which file is missing and why; the other formats are still written.
    """
    # looked up on their modules at call time, so a test can make one fail
    exporters = (
        ("CS336 pickles", ("vocab.pkl", "merges.pkl"), tokenizer_to_pickles),
        ("GPT-2 files", ("encoder.json", "vocab.bpe"), gpt2_files.tokenizer_to_gpt2_files),
        ("Hugging Face", ("tokenizer.json",), hf_json.tokenizer_to_hf_json),
        ("tiktoken rank file", (_tiktoken_name(tokenizer),), _export_tiktoken),
    )
    out: dict[str, bytes] = {}
    failures: list[ExportFailure] = []
    for what, names, export in exporters:
        try:
            if export is not _export_tiktoken:
                _check_merges_reproduce(tokenizer)
            out.update(export(tokenizer))
        except FormatError as err:
            failures.append(ExportFailure(what, names, str(err)))
    return ExportedFiles(out, failures)


def _check_merges_reproduce(tokenizer: Tokenizer) -> None:
    """A format with a merge list can hold a rank-mode tokenizer only when every token is
    built by a merge; else the file would encode differently, with no sign."""
    if tokenizer.by_rank and tokenizer.whole_only:
        raise FormatError(
            f"{len(tokenizer.whole_only):,} of this tokenizer's tokens (e.g. "
            f"{tokenizer.whole_only[0]!r}) are built by no merge of two lower-ranked tokens, "
            "so a merge list would encode differently; the .tiktoken rank file keeps it exact"
        )


def _tiktoken_name(tokenizer: Tokenizer) -> str:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in (tokenizer.name or "tokenizer"))
    return f"{stem}.tiktoken"


def _export_tiktoken(tokenizer: Tokenizer) -> dict[str, bytes]:
    return {_tiktoken_name(tokenizer): tiktoken_file.tokenizer_to_tiktoken(tokenizer)}
