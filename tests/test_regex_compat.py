"""core.engine.regex_compat: the stand-in for ``regex`` on stdlib ``re`` matches like ``regex`` itself.

Every pattern core compiles is compiled twice, with ``regex`` and with the stand-in, and
``findall`` must agree on the built-in corpus, a multilingual text and generated Unicode text.
Generated text keeps to characters whose general category is the same in Python's
``unicodedata`` and in ``regex``'s (newer) tables: the stand-in is exact on those only.
"""

from __future__ import annotations

import subprocess
import sys
import time
import unicodedata
from functools import cache

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine import regex_compat
from core.train.builtin_corpus import builtin_corpus_text
from core.pipeline import pattern as pattern_module
from core.pipeline import pre_tokenizers, unicode_tables
from core.pipeline import added_tokens
from core.pipeline.pattern import Pattern, onig_to_python
from core.engine.pretokenize import PATTERNS, SAFE_CUT_BYTES, ascii_pattern, compile_pattern
from core.engine.regex_compat import fallback

MULTILINGUAL = (
    "Hello world! DON'T don't I'M we'LL You'Re THEY'VE it'd ſ'S K'D 'll\n"
    "  \t\n\n   Größe 42 12345 3.14159 ½ ² ³ ٣٤٥ ۱۲ १२३ ๓ 中文字符 日本語のテキスト、カタカナ。\n"
    "한국어 텍스트 Ελληνικά ΣΊΣΥΦΟΣ Русский текст עברית العربية हिन्दी ไทย ქართული Հայերեն\n"
    "🎉👍🏽 👨‍👩‍👧 🇫🇷 ǅungla ᾈᾘ e\u0301 a\u0308\u0323 \u00a0x\u3000y\u2028z \x1c\x1d\x1e\x1f w\x85v\n"
    "Ⓐⓑ🄰 \u200c\u200d ‿⁀ x_y snake_case camelCase HTTPServer iPhone 1st 2nd\r\n\r\n"
    "tabs\t\tand   spaces   \n\n\n$100 €5 ¥3 (a+b)*c/d <tag attr=\"v\"> //comment\n"
    "   trailing spaces   "
)

# Everything core hands to regex.compile, as source text (the flags core uses alongside)
CORE_PATTERNS: dict[str, tuple[str | bytes, int]] = {
    **{name: (source, 0) for name, source in PATTERNS.items()},
    **{f"{name}-ascii": (ascii_pattern(name).pattern, 0) for name in PATTERNS},  # type: ignore[union-attr]
    "safe-cut-bytes": (SAFE_CUT_BYTES.pattern, 0),
    "hf-byte-level": (onig_to_python(pre_tokenizers.BYTE_LEVEL_PATTERN.source), regex.MULTILINE),
    "hf-whitespace": (pre_tokenizers._WORDS.pattern, 0),
    "hf-word-char": (added_tokens._WORD_CHAR.pattern, 0),
    "hf-space-char": (added_tokens._SPACE_CHAR.pattern, 0),
    "newer-than-unicode-16": (unicode_tables.NEWER_THAN_UNICODE_16.pattern, 0),
    "lowercase-slow": (unicode_tables.LOWERCASE_SLOW.pattern, 0),
    # Oniguruma's escapes as onig_to_python rewrites them (\w with Alphabetic and M, \b, \R)
    "onig-escapes": (onig_to_python(r"\w+|\W|\b.|\B\s|\R|\h+|\p{P}\p{S}|(?i:é)"), regex.MULTILINE),
    "onig-classes": (onig_to_python(r"[\w\-]+|[^\s\w]+|[\p{N}\h]"), regex.MULTILINE),
    "escaped-literal": (regex.escape("a.b*c [x] {1} (?i) \\p{L} ^$|"), 0),
}


def _both(source: str | bytes, flags: int) -> tuple[regex.Pattern, object]:
    return regex.compile(source, flags | regex.V0), fallback.compile(source, flags)


@pytest.mark.parametrize("name", CORE_PATTERNS)
def test_the_fallback_matches_like_regex_on_fixed_texts(name):
    source, flags = CORE_PATTERNS[name]
    real, stand_in = _both(source, flags)
    texts = [builtin_corpus_text(), MULTILINGUAL, "", " ", "\n", "a"]
    if isinstance(source, bytes):
        texts = [t.encode("utf-8") for t in texts]
    for text in texts:
        assert stand_in.findall(text) == real.findall(text), (name, text[:80])


@cache
def _same_category() -> frozenset[str]:
    """Assigned characters (no surrogates) whose general category regex and unicodedata share."""
    everything = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
    in_regex: dict[str, str] = {}
    for cat in ("Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl Zp "
                "Cc Cf Co").split():  # fmt: skip
        for run in regex.findall(rf"\p{{{cat}}}+", everything):
            in_regex.update(dict.fromkeys(run, cat))
    return frozenset(ch for ch, cat in in_regex.items() if unicodedata.category(ch) == cat)


def _chars_in_both(ch: str) -> bool:
    return ch in _same_category()


#: Characters the patterns care about most, mixed in so generated text has structure
_STRUCTURE = list(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000'sStTmMdDlLvVrReE09/.,!_ſ\u200d")
_TEXT = st.text(
    st.one_of(
        st.sampled_from(_STRUCTURE),
        st.characters(blacklist_categories=("Cs", "Cn")).filter(_chars_in_both),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT)
def test_the_fallback_matches_like_regex_on_generated_text(text):
    for name, (source, flags) in CORE_PATTERNS.items():
        if isinstance(source, str) and not name.endswith("-ascii"):
            real, stand_in = _both(source, flags)
            assert stand_in.findall(text) == real.findall(text), name


def test_only_characters_newer_than_python_and_two_recategorized_ones_differ():
    """What the module docstring promises about Unicode versions, checked against regex."""
    differ = [
        ch for ch in map(chr, range(0x110000))
        if not 0xD800 <= ord(ch) <= 0xDFFF and unicodedata.category(ch) not in ("Cn", "Co")
        and ch not in _same_category()
    ]  # fmt: skip
    if unicodedata.unidata_version == "14.0.0":
        assert differ == ["\u0295", "\U0001171e"]
    assert len(differ) <= 2


def test_planes_4_to_13_are_unassigned_and_15_16_private_use_as_assumed():
    assert {unicodedata.category(chr(cp)) for cp in range(0x40000, 0xE0000)} == {"Cn"}
    for plane in (0xF0000, 0x100000):
        assert {unicodedata.category(chr(cp)) for cp in range(plane, plane + 0xFFFE)} == {"Co"}
        assert unicodedata.category(chr(plane + 0xFFFF)) == "Cn"


@pytest.mark.parametrize(
    "source",
    [r"\p{Han}+", r"[[:punct:]]", r"\p{Alphabetic}", r"[\p{Alphabetic}\d]", r"\X", r"\p{L"],
)
def test_what_the_fallback_cannot_do_exactly_is_an_error(source):
    with pytest.raises(fallback.error):
        fallback.compile(source)


def test_property_names_are_read_like_regex_reads_them():
    for source in [r"\p{Letter}+", r"\p{gc=Lu}", r"\p{General_Category:Lu}", r"\pN+", r"\p{^N}",
                   r"\P{L}+", r"[\P{L}x]+", r"\p{L&}+", r"\p{LC}+", r"\p{punct}", r"\p{Any}",
                   r"\p{WSpace}+", r"[]a\p{N}]+", r"[^\P{L}]+", r"[a&&b]"]:  # fmt: skip
        real, stand_in = _both(source, 0)
        assert stand_in.findall(MULTILINGUAL) == real.findall(MULTILINGUAL), source


def test_pipeline_patterns_work_through_the_fallback(monkeypatch):
    monkeypatch.setattr(pattern_module, "regex", fallback)
    text = "Hello  world 42, Größe!"
    assert Pattern.regex(r"\p{N}{1,3}+|\s+").matches(text) == [(5, 7), (12, 13), (13, 15), (16, 17)]
    assert Pattern.string("o").matches(text) == [(4, 5), (8, 9)]


# Python that cannot import regex: every import of it raises, as on Pyodide without the wheel
_BLOCK_REGEX = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "regex":
            raise ImportError(f"{name} is blocked in this test")
sys.meta_path.insert(0, _Block())
"""

_TRAIN_ENCODE_DECODE = """
import json, sys
import core
from core.engine.regex_compat import HAVE_REGEX
texts = json.loads(sys.stdin.read())
out = {"have_regex": HAVE_REGEX, "regex_loaded": "regex" in sys.modules}
for pattern in ("gpt2", "cl100k", "o200k"):
    vocab, merges = core.train_bpe(texts, 400, ["<|endoftext|>"], pattern=pattern, num_workers=1)
    tok = core.Tokenizer(vocab, merges, ["<|endoftext|>"], pattern=pattern)
    ids = [tok.encode(t) for t in texts]
    assert [tok.decode(i) for i in ids] == texts
    out[pattern] = {"merges": [[a.hex(), b.hex()] for a, b in merges], "ids": ids}
print(json.dumps(out))
"""


def _run(prelude: str, texts: list[str]) -> dict:
    import json

    out = subprocess.run(
        [sys.executable, "-c", prelude + _TRAIN_ENCODE_DECODE],
        input=json.dumps(texts), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_core_trains_encodes_and_decodes_with_regex_blocked():
    texts = [MULTILINGUAL, builtin_corpus_text()[:20_000], "DON'T stop<|endoftext|>我们 don't"]
    blocked, normal = _run(_BLOCK_REGEX, texts), _run("", texts)
    assert (blocked.pop("have_regex"), blocked.pop("regex_loaded")) == (False, False)
    assert (normal.pop("have_regex"), normal.pop("regex_loaded")) == (True, True)
    assert blocked == normal


def test_regex_is_used_when_it_imports():
    assert regex_compat.HAVE_REGEX and regex_compat.regex is regex


# -- HeldPattern: matching short texts without letting go of the GIL ----------------------


class _Recorder:
    """A stand-in for a compiled pattern: records what each call was asked for."""

    pattern, flags, groups = "x", 0, 0

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def __getattr__(self, method: str):
        def call(*args, concurrent=None):
            self.calls.append((method, concurrent))
            return []
        return call


def test_a_held_pattern_keeps_the_gil_on_short_texts_and_lets_go_on_long_ones():
    rec = _Recorder()
    held = regex_compat.HeldPattern(rec)
    short, long = "x" * regex_compat.GIL_HELD_CHARS, "x" * (regex_compat.GIL_HELD_CHARS + 1)
    for text in (short, long):
        held.findall(text)
        held.finditer(text, 0)
        held.search(text, 1)
        held.match(text)
        held.fullmatch(text)
        held.split(text)
        held.sub("y", text)
    methods = ["findall", "finditer", "search", "match", "fullmatch", "split", "sub"]
    assert rec.calls == [(m, False) for m in methods] + [(m, None) for m in methods]


@pytest.mark.parametrize("source,flags", [(PATTERNS["gpt2"], 0), (PATTERNS["o200k"], 0),
                                          (r"\s+|\p{L}+", regex.MULTILINE | regex.V0)])
def test_a_held_pattern_matches_as_regex_does(source, flags):
    held, plain = regex_compat.compile_held(source, flags), regex.compile(source, flags)
    text = MULTILINGUAL
    assert held.findall(text) == plain.findall(text)
    assert [m.span() for m in held.finditer(text, 3, 90)] == [m.span() for m in plain.finditer(text, 3, 90)]
    assert held.search(text, 5).span() == plain.search(text, 5).span()
    assert (held.match(text, 1) or plain.match(text, 1)) is None or held.match(text, 1).span() == plain.match(text, 1).span()
    assert held.split(text) == plain.split(text)
    assert held.sub("_", text) == plain.sub("_", text)
    assert (held.pattern, held.flags, held.groups) == (plain.pattern, plain.flags, plain.groups)


def _other_thread_runs_while(work) -> bool:
    """Whether a waiting thread got the GIL while ``work()`` ran: with a switch interval
    of 1,000 s, only a thread that lets go of the GIL itself lets another one in."""
    import threading

    ticks, stop, parked = [0], [False], threading.Event()

    def other() -> None:
        parked.set()
        while not stop[0]:
            ticks[0] += 1
            time.sleep(0)  # lets go of the GIL at once: the main thread takes it back

    old = sys.getswitchinterval()
    thread = threading.Thread(target=other, daemon=True)
    try:
        sys.setswitchinterval(1000)
        thread.start()
        parked.wait()
        before = ticks[0]
        work()
        return ticks[0] != before
    finally:
        stop[0] = True
        sys.setswitchinterval(old)
        thread.join()


def test_short_texts_are_pre_tokenized_without_letting_another_thread_in():
    text = "Held by one thread: ünïcode too, 123 times over."
    engine, plain = compile_pattern("gpt2"), regex.compile(PATTERNS["gpt2"])
    split = Pattern(r"\p{L}+", is_regex=True)
    assert engine.findall(text) == plain.findall(text)
    assert not _other_thread_runs_while(lambda: [engine.findall(text) for _ in range(200)])
    assert not _other_thread_runs_while(lambda: [split.matches(text) for _ in range(200)])
    # the control: plain `regex` lets go at each of its 32,000 matches
    assert _other_thread_runs_while(lambda: [plain.findall(text) for _ in range(2000)])
