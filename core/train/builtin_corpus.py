"""The built-in training corpus: docstrings of the Python standard library, needs no download.

Every Python install ships its standard library, and its docstrings are about 0.9 MB of
English technical prose with code fragments: a good first corpus for watching BPE learn
(``" the"``, ``"ing"``, ``"self"``, ``"return"`` appear within the first merges).

The text is assembled at run time, deterministically: a fixed list of modules in sorted order,
and inside each module its docstring followed by the docstrings of its public classes,
functions and methods, sorted by name. Documents (one per module) are joined with
``<|endoftext|>``, so train with that special token to keep merges from crossing modules.

The exact bytes depend on the Python version (docstrings change between releases), but are
identical for every call and every process on one install. A module that cannot be imported
(a trimmed-down Python, for instance) is skipped; if none yields text, a short project-written
fallback text is used, so the corpus is never empty.

>>> text = builtin_corpus_text()
>>> text == builtin_corpus_text()          # cached, and deterministic anyway
True
>>> len(text.encode("utf-8")) > 100_000
True
>>> text.count(BUILTIN_SEPARATOR) == len(builtin_corpus_documents()) - 1
True
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
from typing import Any

__all__ = [
    "BUILTIN_CORPUS_NAME",
    "BUILTIN_MODULES",
    "BUILTIN_SEPARATOR",
    "FALLBACK_TEXT",
    "builtin_corpus_documents",
    "builtin_corpus_text",
    "module_document",
]

BUILTIN_CORPUS_NAME = "Python standard library docstrings (built in)"
BUILTIN_SEPARATOR = "<|endoftext|>"

# Sorted, and only modules that import without side effects (no `this`, no `antigravity`,
# no GUI toolkits, nothing deprecated; not `sys`, whose members tools replace at run time).
# Adding a module changes the corpus, so the list is fixed here; together they give about
# 1 MB of text.
BUILTIN_MODULES: tuple[str, ...] = tuple(
    sorted(
        (
            "abc", "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "cmd",
            "collections", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal",
            "difflib", "email.message", "enum", "fractions", "functools", "gettext", "glob",
            "gzip", "hashlib", "heapq", "hmac", "html", "http.client", "imaplib", "inspect",
            "io", "ipaddress", "itertools", "json", "logging", "mailbox", "math", "os",
            "pathlib", "pickle", "pprint", "queue", "random", "re", "sched", "secrets",
            "shlex", "shutil", "socket", "sqlite3", "statistics", "string", "struct",
            "subprocess", "tarfile", "tempfile", "textwrap", "threading", "timeit",
            "tokenize", "typing", "unittest", "urllib.parse", "urllib.request", "uuid",
            "warnings", "weakref", "xml.etree.ElementTree", "zipfile", "zoneinfo",
            "array", "asyncio.base_events", "asyncio.events", "asyncio.locks",
            "asyncio.queues", "asyncio.streams", "asyncio.tasks", "bdb", "builtins", "bz2",
            "code", "codecs", "codeop", "collections.abc", "compileall", "configparser",
            "dis", "doctest", "email.charset", "email.headerregistry", "email.policy",
            "email.utils", "fileinput", "filecmp", "ftplib", "gc", "getopt", "graphlib",
            "http.cookiejar", "http.cookies", "http.server", "importlib.metadata",
            "importlib.util", "locale", "logging.config", "logging.handlers", "lzma",
            "marshal", "mimetypes", "optparse", "pdb", "pickletools", "pkgutil", "platform",
            "plistlib", "poplib", "profile", "pstats", "py_compile", "pyclbr", "pydoc",
            "rlcompleter", "select", "selectors", "shelve", "smtplib", "socketserver", "ssl",
            "symtable", "sysconfig", "time", "unicodedata", "unittest.case",
            "unittest.mock", "wave", "wsgiref.handlers", "wsgiref.validate", "xml.dom.minidom",
            "xml.sax.handler", "xmlrpc.client", "xmlrpc.server", "zipimport", "zlib",
        )
    )
)

FALLBACK_TEXT = """\
Byte-level BPE starts from the 256 possible byte values and learns merges. It counts every
adjacent pair of tokens inside each pre-token, merges the most frequent pair into a new token,
and repeats until the vocabulary reaches the size you asked for. Ties go to the pair that is
lexicographically greater, compared as bytes.
<|endoftext|>
The pre-tokenizer splits text with a regular expression before any merge happens, so a merge
never joins the end of one word with the start of the next. The GPT-2 pattern keeps a leading
space with the word that follows it: " the", " tokenizer", " merges".
<|endoftext|>
Special tokens such as the end-of-text marker are never split and never merged with their
neighbours. They get the first IDs of the vocabulary, then come the 256 single bytes, then the
merges in the order they were learned. Decoding looks up the bytes of each ID and joins them;
bytes that do not form valid UTF-8 become the replacement character.
"""


def _clean(doc: Any) -> str:
    """The object's *own* docstring, dedented; ``""`` when there is none.

    subtle: inspect.getdoc() inherits docstrings from base classes, which would repeat
    ``object.__init__``'s text hundreds of times; reading ``__doc__`` directly does not.

    >>> _clean("  Hello.\\n\\n    Indented body.\\n  ")
    'Hello.\\n\\nIndented body.'
    >>> _clean(None)
    ''
    """
    if not isinstance(doc, str):
        return ""
    return inspect.cleandoc(doc).strip()


def _member_docs(module: Any) -> list[str]:
    """Docstrings of a module's public classes, functions and their methods, sorted by name."""
    docs: list[str] = []
    for name, obj in sorted(vars(module).items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue  # private, or re-exported from another module (avoid duplicates)
        if name.endswith("hook"):
            continue  # subtle: tools replace hooks at run time (pytest: sys.unraisablehook)
        if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            continue
        docs.append(_clean(getattr(obj, "__doc__", None)))
        if inspect.isclass(obj):
            for member_name, member in sorted(vars(obj).items()):
                if member_name.startswith("_"):
                    continue
                if inspect.isfunction(member) or inspect.ismethoddescriptor(member):
                    docs.append(_clean(getattr(member, "__doc__", None)))
    return docs


def module_document(name: str) -> str:
    """One module's document: its docstring, then its public members' docstrings.

    Returns ``""`` when the module cannot be imported, so a trimmed-down Python still works.

    >>> module_document("textwrap").startswith("Text wrapping and filling.")
    True
    >>> module_document("no_such_module_here")
    ''
    """
    with warnings.catch_warnings():
        # subtle: importing some modules, or reading deprecated aliases such as typing.io,
        # warns; the corpus is the same either way, so keep test output and logs clean
        warnings.simplefilter("ignore")
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - any import failure just means "skip this module"
            return ""
        parts = [_clean(module.__doc__), *_member_docs(module)]
    seen: set[str] = set()
    unique = []
    for part in parts:
        if part and part not in seen:  # some classes share one docstring between methods
            seen.add(part)
            unique.append(part)
    return "\n\n".join(unique)


@functools.lru_cache(maxsize=1)
def builtin_corpus_documents() -> tuple[str, ...]:
    """The corpus as documents, one per module (in ``BUILTIN_MODULES`` order).

    Falls back to the documents of ``FALLBACK_TEXT`` when no module yields text.

    >>> docs = builtin_corpus_documents()
    >>> all(BUILTIN_SEPARATOR not in d for d in docs)
    True
    """
    docs = []
    for name in BUILTIN_MODULES:
        doc = module_document(name)
        # subtle: a docstring that happens to contain the separator would split a document
        # in two and shift the document count; remove it (none in CPython 3.10-3.13 do).
        doc = doc.replace(BUILTIN_SEPARATOR, "")
        if doc:
            docs.append(doc)
    if not docs:
        docs = [d.strip() for d in FALLBACK_TEXT.split(BUILTIN_SEPARATOR)]
    return tuple(docs)


@functools.lru_cache(maxsize=1)
def builtin_corpus_text() -> str:
    """The whole built-in corpus: documents joined with ``<|endoftext|>``.

    >>> builtin_corpus_text().startswith("Abstract Base Classes (ABCs)")
    True
    """
    return BUILTIN_SEPARATOR.join(builtin_corpus_documents())
