"""Generated inputs from many scripts: short strings one call each, and a 50 KB document.

Our corpora's short texts are English lines; a real user also types Cyrillic, CJK, Arabic,
emoji and the odd control character. :func:`mixed_short_texts` makes a few thousand strings
of 1 to 80 characters, :func:`mixed_document` a 50 KB document, both from a seeded
``random.Random`` choosing among the scripts of :data:`SCRIPTS` (the same inputs on every
machine and run):

>>> texts = mixed_short_texts(200)
>>> texts == mixed_short_texts(200), min(map(len, texts)) >= 1, max(map(len, texts)) <= 80
(True, True, True)
>>> 50_000 <= len(mixed_document().encode("utf-8")) < 52_500
True
"""

from __future__ import annotations

import random
from collections.abc import Callable

__all__ = ["SCRIPTS", "first_text", "mixed_document", "mixed_short_texts", "sampler"]

Word = Callable[[random.Random], str]


def _span(*ranges: tuple[int, int]) -> list[str]:
    """The characters of the inclusive code point ``ranges``."""
    return [chr(c) for lo, hi in ranges for c in range(lo, hi + 1)]


def _letters(chars: list[str], marks: list[str] = (), mark_rate: float = 0.0,  # type: ignore[assignment]
             lo: int = 1, hi: int = 8) -> Word:
    """A word of ``lo``..``hi`` of ``chars``, each followed by one of ``marks`` at ``mark_rate``."""

    def word(rng: random.Random) -> str:
        out = []
        for _ in range(rng.randint(lo, hi)):
            out.append(rng.choice(chars))
            if marks and rng.random() < mark_rate:
                out.append(rng.choice(marks))
        return "".join(out)

    return word


def _words(samples: str) -> Word:
    """One of the space-separated ``samples`` (real words: BPE merges them)."""
    choices = samples.split()
    return lambda rng: rng.choice(choices)


def _either(*makers: Word) -> Word:
    return lambda rng: rng.choice(makers)(rng)


_EMOJI = _span((0x1F600, 0x1F64F), (0x1F300, 0x1F5FF), (0x1F680, 0x1F6C5), (0x2600, 0x26FF))
_SKIN = _span((0x1F3FB, 0x1F3FF))
_REGIONAL = _span((0x1F1E6, 0x1F1FF))
_TAGS = _span((0xE0061, 0xE007A))  # tag letters, as in the flags of England, Scotland, Wales


def _emoji(rng: random.Random) -> str:
    """An emoji, a skin-toned one, a ZWJ sequence, a flag or a tag sequence."""
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(_EMOJI) + rng.choice(_SKIN)
    if kind == 1:
        return rng.choice(_EMOJI) + "\u200d" + rng.choice(_EMOJI) + "\ufe0f"
    if kind == 2:
        return rng.choice(_REGIONAL) + rng.choice(_REGIONAL)
    if kind == 3:
        return "\U0001f3f4" + "".join(rng.choices(_TAGS, k=rng.randint(2, 5))) + "\U000e007f"
    return "".join(rng.choices(_EMOJI, k=rng.randint(1, 3)))


_CONTROLS = ["\t", "\n", "\r", "\r\n", "\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\x9f",
             "\u200b", "\u200d", "\u200e", "\u2028", "\ufeff", "\u00a0", "\u3000", "\u00ad",
             "\u2003", "\ufffd", "\n\n", "  ", "\t\t"]  # fmt: skip
_COMBINING = _span((0x0300, 0x036F))

#: Script name -> a maker of one word of it (character ranges and real word samples).
SCRIPTS: dict[str, Word] = {
    "latin": _either(
        _words("the of and to in is that for it with as was on be by this are from at or have "
               "an they which one you were her all there would their we him been has when who "
               "Hello World Python tokenizer café naïve façade über Straße smörgåsbord año "
               "niño coração ação Łódź Dvořák žluťoučký İstanbul ğüşöç Ærø fjörður"),
        _letters(_span((0x61, 0x7A), (0x41, 0x5A), (0xC0, 0xFF), (0x100, 0x17F)), lo=1, hi=10),
    ),
    "digits": _either(
        _letters(_span((0x30, 0x39)), lo=1, hi=12),
        _letters(_span((0x660, 0x669), (0x966, 0x96F), (0xFF10, 0xFF19)), lo=1, hi=6),
    ),
    "punct": _letters(list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~«»“”‘’—–…¿¡•·§¶†‰€£¥©®™°±×÷"),
                      lo=1, hi=3),
    "cyrillic": _either(
        _words("и в не на я быть он с что а по это она этот к но они мы как из у который то за "
               "свой Привет мир Москва токенизатор україна їжак ґанок Ђорђе"),
        _letters(_span((0x410, 0x44F), (0x400, 0x40F), (0x450, 0x45F))),
    ),
    "greek": _either(
        _words("και το να του η την με της που για στο είναι ένα Καλημέρα κόσμε ἀρετή ὁ λόγος"),
        _letters(_span((0x391, 0x3A1), (0x3A3, 0x3A9), (0x3B1, 0x3C9), (0x3AC, 0x3AF))),
    ),
    "cjk": _either(
        _words("的 一 是 不 了 人 我 在 有 他 这 中 大 来 上 国 个 到 说 们 为 子 和 你 地 出 "
               "中文分词 你好世界 東京 日本語 こんにちは ありがとう カタカナ トークナイザー"),
        _letters(_span((0x4E00, 0x62FF)), lo=1, hi=6),
        _letters(_span((0x3041, 0x3096), (0x30A1, 0x30FA)), lo=1, hi=6),
        _letters(_span((0xFF01, 0xFF5E), (0x3001, 0x3011)), lo=1, hi=3),  # fullwidth, CJK punct
    ),
    "hangul": _either(
        _words("안녕하세요 세계 한국어 토크나이저 그리고 하지만 그래서 사람 시간 오늘"),
        _letters(_span((0xAC00, 0xD7A3)), lo=1, hi=5),
        _letters(_span((0x1100, 0x1112), (0x1161, 0x1175)), lo=2, hi=4),  # conjoining jamo
    ),
    "arabic": _either(
        _words("في من على إلى أن عن مع هذا كان الذي مرحبا بالعالم العربية كتاب"),
        _letters(_span((0x621, 0x63A), (0x641, 0x64A)), _span((0x64B, 0x652)), 0.3),
    ),
    "hebrew": _either(
        _words("של את על לא הוא זה עם כל שלום עולם עברית ספר"),
        _letters(_span((0x5D0, 0x5EA)), _span((0x5B0, 0x5BC)), 0.3),
    ),
    "devanagari": _either(
        _words("के में की है और से को एक नमस्ते दुनिया हिन्दी भाषा क्षत्रिय"),
        _letters(_span((0x905, 0x939)), _span((0x93E, 0x94D)) + ["\u0902", "\u093c"], 0.5),
    ),
    "thai": _either(
        _words("ที่ และ ของ ใน การ เป็น ไม่ สวัสดี ชาวโลก ภาษาไทย กรุงเทพมหานคร"),
        _letters(_span((0xE01, 0xE2E)), _span((0xE31, 0xE3A), (0xE47, 0xE4E)), 0.4),
    ),
    "emoji": _emoji,
    "combining": _letters(_span((0x61, 0x7A)), _COMBINING, 0.6, hi=6),
    "math": _letters(_span((0x1D400, 0x1D454), (0x1D5A0, 0x1D5FF), (0x1D7CE, 0x1D7FF),
                           (0x2200, 0x22FF), (0x2070, 0x209C), (0xB2, 0xB3), (0x2150, 0x215F)),
                     lo=1, hi=5),  # fmt: skip
    "controls": lambda rng: rng.choice(_CONTROLS),
}


def sampler(rng: random.Random) -> Callable[[int], str]:
    """A maker of texts of about ``n`` characters: words of one script (or, a third of the
    time, of any script) joined by spaces, now and then by punctuation or a newline."""

    def text(n: int) -> str:
        mixed = rng.random() < 0.35
        home = rng.choice(list(SCRIPTS))
        parts: list[str] = []
        size = 0
        while size < n:
            script = rng.choice(list(SCRIPTS)) if mixed or rng.random() < 0.1 else home
            word = SCRIPTS[script](rng)
            sep = rng.choices([" ", "", ", ", ". ", "\n", " - "], [60, 15, 8, 8, 5, 4])[0]
            parts.append(word + sep)
            size += len(word) + len(sep)
        return "".join(parts)[:n]

    return text


def mixed_short_texts(count: int = 3000, *, seed: int = 20240601) -> list[str]:
    """``count`` strings of 1 to 80 characters (half of them 20 or shorter), of many scripts."""
    rng = random.Random(seed)
    text = sampler(rng)
    return [text(rng.randint(1, 20) if rng.random() < 0.5 else rng.randint(21, 80))
            for _ in range(count)]  # fmt: skip


def mixed_document(size: int = 50_000, *, seed: int = 7) -> str:
    """A document of at least ``size`` UTF-8 bytes: paragraphs of 40 to 600 characters, each
    of one script or of many, joined by blank lines."""
    rng = random.Random(seed)
    text = sampler(rng)
    paragraphs: list[str] = []
    total = 0
    while total < size:
        paragraphs.append(text(rng.randint(40, 600)).strip() or "x")
        total += len(paragraphs[-1].encode("utf-8")) + 2
    return "\n\n".join(paragraphs)


def first_text(*, seed: int = 1) -> str:
    """One word of every script of :data:`SCRIPTS`, space-separated: a first encode that
    reaches every table a tokenizer may build on first use."""
    rng = random.Random(seed)
    return " ".join(make(rng) for make in SCRIPTS.values())
