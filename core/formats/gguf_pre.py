r"""llama.cpp's pre-tokenizers: the regexes each ``tokenizer.ggml.pre`` name stands for.

A GGUF file names its pre-tokenizer (``"llama-bpe"``, ``"qwen2"``, ``"deepseek-llm"``...)
instead of storing it; llama.cpp maps each name to a list of regexes in
``src/llama-vocab.cpp`` (``llm_tokenizer_bpe``'s constructor and ``llama_vocab::impl::load``).
The table below is that mapping, transcribed. The regexes are applied one after another,
each cutting every piece the previous one left into its matches *and* the text between them
(``unicode_regex_split``; Hugging Face's ``Split(behavior="Isolated")``).

subtle: where llama.cpp rewrote a regex for its own engine and kept the original from
``tokenizer.json`` in a comment (``(?i:'s|...)`` became ``(?:'[sS]|...)``; o200k's letter
classes became ``(?=[\p{L}])([^a-z])``, which also counts a lower-case ``é`` as upper-case),
we take the original: the ``regex`` module runs it as Hugging Face does, so the IDs are
Hugging Face's.

>>> spec = pre_tokenizer_spec("llama-bpe")
>>> spec.key, spec.ignore_merges, spec.add_bos, len(spec.regexes)
('llama3', True, True, 1)
>>> pre_tokenizer_spec("gpt-2").regexes == pre_tokenizer_spec("mpt").regexes
True
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import FormatError

__all__ = ["PRE_NAMES", "PRE_REGEXES", "PreTokenizerSpec", "pre_tokenizer_spec"]

# fmt: off
#: llama.cpp's LLAMA_VOCAB_PRE_TYPE_* (lower-cased; one key per distinct list, the types that
#: share it named in the comment) -> its regexes, in the order they are applied.
PRE_REGEXES: dict[str, tuple[str, ...]] = {
    # llama3
    'llama3': (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # jais2
    'jais2': (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}",),
    # dbrx, smaug, chatglm4
    'dbrx': (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # deepseek_llm
    'deepseek_llm': (
        r"[\r\n]",
        r"\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
        r"\s?[!-/:-~！-／：-～‘-‟\u3000-。]+",
        r"\s+$",
        r"[一-龥ࠀ-一가-\uD7FF]+",
        r"\p{N}+",
    ),
    # deepseek3_llm, hunyuan_dense, joyai_llm, hy_v4
    'deepseek3_llm': (
        r"\p{N}{1,3}",
        r"[一-龥\u3040-ゟ゠-ヿ]+",
        r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    ),
    # spark2_5
    'spark2_5': (
        r"\p{N}{1,3}",
        r"[一-龥\u3040-ゟ゠-ヿ]+",
        r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+""",
        r"\p{N}",
    ),
    # youtu
    'youtu': (
        r"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥\u3040-ゟ゠-ヿ]+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    # deepseek_coder
    'deepseek_coder': (
        r"[\r\n]",
        r"\s?\p{L}+",
        r"\s?\p{P}+",
        r"[一-龥ࠀ-一가-\uD7FF]+",
        r"\p{N}",
    ),
    # falcon
    'falcon': (
        r"[\p{P}\$\+<=>\^~\|`]+",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
        r"[0-9][0-9][0-9]",
    ),
    # starcoder, refact, command_r, smollm, codeshell, exaone, minerva, mellum2
    'starcoder': (
        r"\p{N}",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
    ),
    # gpt2, mpt, olmo, jais, trillion, granite_docling
    'gpt2': (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",),
    # stablelm2, qwen2, hunyuan, solar_open, grok_2
    'stablelm2': (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # qwen35
    'qwen35': (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # poro, bloom, gpt3_finnish
    'poro': (r" ?[^(\s|.,!?…。，、।۔،)]+",),
    # viking
    'viking': (
        r" ?[^(\s|.,!?…。，、।۔،)]+",
        r"\p{N}",
    ),
    # tekken
    'tekken': (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # chameleon
    'chameleon': (
        r"<sentinel:[0-9]+>",
        r"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
        r"([\t\n]|    |  )",
        r"\p{N}",
        r"[\p{P}!-/:-@\[-`{-~]",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
    ),
    # gpt4o, minimax_m2
    'gpt4o': (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # granite_emb_multi
    'granite_emb_multi': (r"[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # tiny_aya
    'tiny_aya': (
        r"\d{1,3}(?=(?:\d{3})*\b)",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    # kimi_k2
    'kimi_k2': (r"\p{Han}+",),
    # superbpe
    'superbpe': (
        r"\p{N}+",
        r"(?=(\d{3})+(?!\d))",
    ),
    # bailingmoe
    'bailingmoe': (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",),
    # seed_coder
    'seed_coder': (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # ufakzeka
    'ufakzeka': (r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",),
    # afmoe
    'afmoe': (
        r"\p{AFMoE_digits}",
        r"[一-鿿㐀-䶿豈-\uFAFF\u3040-ゟ゠-ヿ･-ﾟ⼀-\u2FDFเ-\u0E7F\u0E80-\u0EFFក-\u17FFက-႟ꩠ-ꩿꧠ-\uA9FF가-\uD7AFᄀ-ᇿ]+",
        r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    ),
    # laguna
    'laguna': (
        r"[^\n]+|[\n]+",
        r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    # exaone_moe
    'exaone_moe': (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+",),
    # gemma4, sarvam_moe
    'gemma4': (r"[^\n]+|[\n]+",),
    # minicpm5
    'minicpm5': (
        r"\p{N}{1,3}",
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    ),
    # whitespace
    'whitespace': (r"\S+",),
    # default
    'default': (
        r"[\p{P}\$\+<=>\^~\|]+",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
        r"\p{N}+",
        r"[0-9][0-9][0-9]",
    ),
}

#: ``tokenizer.ggml.pre`` -> (its PRE_REGEXES key, the flags llama.cpp sets for it):
#: ``ignore_merges`` (a piece that is a token is taken whole), ``add_bos`` (BOS by default),
#: ``no_bos`` (the model has no BOS token).
PRE_NAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    'default': ('default', ()),
    'minicpm5': ('minicpm5', ('ignore_merges',)),
    'llama3': ('llama3', ('ignore_merges', 'add_bos')),
    'llama-v3': ('llama3', ('ignore_merges', 'add_bos')),
    'llama-bpe': ('llama3', ('ignore_merges', 'add_bos')),
    'falcon3': ('llama3', ('ignore_merges', 'add_bos')),
    'falcon-h1': ('llama3', ('ignore_merges', 'add_bos')),
    'pixtral': ('llama3', ('ignore_merges', 'add_bos')),
    'midm-2.0': ('llama3', ('ignore_merges', 'add_bos')),
    'lfm2': ('llama3', ('ignore_merges', 'add_bos')),
    'jina-v5-nano': ('llama3', ('ignore_merges', 'add_bos')),
    'deepseek-llm': ('deepseek_llm', ()),
    'deepseek-coder': ('deepseek_coder', ()),
    'deepseek-v3': ('deepseek3_llm', ()),
    'spark2_5': ('spark2_5', ()),
    'youtu': ('youtu', ('ignore_merges',)),
    'falcon': ('falcon', ()),
    'mpt': ('gpt2', ()),
    'starcoder': ('starcoder', ()),
    'gpt-2': ('gpt2', ()),
    'phi-2': ('gpt2', ()),
    'jina-es': ('gpt2', ()),
    'jina-de': ('gpt2', ()),
    'gigachat': ('gpt2', ()),
    'jina-v2-es': ('gpt2', ()),
    'jina-v2-de': ('gpt2', ()),
    'a.x-4.0': ('gpt2', ()),
    'mellum': ('gpt2', ()),
    'modern-bert': ('gpt2', ()),
    'jais-2': ('jais2', ()),
    'gemma4': ('gemma4', ()),
    'granite-embed-multi-311m': ('gemma4', ()),
    'sarvam-moe': ('gemma4', ()),
    'jina-v1-en': ('gpt2', ()),
    'jina-v2-code': ('gpt2', ()),
    'roberta-bpe': ('gpt2', ()),
    'whitespace': ('whitespace', ()),
    'refact': ('starcoder', ()),
    'command-r': ('starcoder', ()),
    'qwen2': ('stablelm2', ()),
    'deepseek-r1-qwen': ('stablelm2', ()),
    'kormo': ('stablelm2', ()),
    'f2llmv2': ('stablelm2', ()),
    'qwen35': ('qwen35', ()),
    'stablelm2': ('stablelm2', ()),
    'olmo': ('gpt2', ()),
    'dbrx': ('dbrx', ()),
    'smaug-bpe': ('dbrx', ()),
    'poro-chat': ('poro', ()),
    'chatglm-bpe': ('dbrx', ('no_bos',)),
    'glm4': ('dbrx', ('ignore_merges', 'no_bos')),
    'glm5': ('dbrx', ('ignore_merges', 'no_bos')),
    'viking': ('viking', ()),
    'jais': ('gpt2', ()),
    'tekken': ('tekken', ('ignore_merges', 'add_bos')),
    'smollm': ('starcoder', ()),
    'codeshell': ('starcoder', ()),
    'bloom': ('poro', ()),
    'gpt3-finnish': ('poro', ()),
    'exaone': ('starcoder', ()),
    'exaone4': ('gpt2', ()),
    'exaone-moe': ('exaone_moe', ()),
    'chameleon': ('chameleon', ('add_bos',)),
    'minerva-7b': ('starcoder', ()),
    'megrez': ('stablelm2', ()),
    'gpt-4o': ('gpt4o', ()),
    'llama4': ('gpt4o', ()),
    'kanana2': ('gpt4o', ()),
    'talkie': ('gpt4o', ()),
    'granite-embed-multi-97m': ('granite_emb_multi', ('ignore_merges',)),
    'tiny_aya': ('tiny_aya', ()),
    'cohere2moe': ('tiny_aya', ()),
    'superbpe': ('superbpe', ()),
    'trillion': ('gpt2', ()),
    'granite-docling': ('gpt2', ()),
    'bailingmoe': ('bailingmoe', ()),
    'bailingmoe2': ('bailingmoe', ()),
    'llada-moe': ('bailingmoe', ()),
    'seed-coder': ('seed_coder', ()),
    'hunyuan': ('stablelm2', ()),
    'hunyuan-dense': ('deepseek3_llm', ()),
    'hy_v4': ('deepseek3_llm', ()),
    'joyai-llm': ('deepseek3_llm', ()),
    'kimi-k2': ('kimi_k2', ()),
    'ufakzeka': ('ufakzeka', ()),
    'grok-2': ('stablelm2', ()),
    'afmoe': ('afmoe', ()),
    'laguna': ('laguna', ()),
    'minimax-m2': ('gpt4o', ()),
    'solar-open': ('stablelm2', ()),
    'mellum2': ('starcoder', ()),
}
# fmt: on

# Types whose vocab is raw UTF-8 with SentencePiece's ▁, not GPT-2's byte map (byte_encode =
# false in llama.cpp), and types llama.cpp splits with hand-written code, not regexes.
_RAW_UTF8 = frozenset({"gemma4", "whitespace"})
_CUSTOM_CODE = frozenset({"kimi_k2", "afmoe", "superbpe"})


@dataclass(frozen=True)
class PreTokenizerSpec:
    """What one ``tokenizer.ggml.pre`` name means: its regexes and llama.cpp's flags."""

    name: str
    key: str
    regexes: tuple[str, ...]
    ignore_merges: bool = False
    add_bos: bool = False
    no_bos: bool = False
    byte_level: bool = True


def pre_tokenizer_spec(pre: str | None, *, file_name: str = "model.gguf") -> PreTokenizerSpec:
    """The spec for a ``tokenizer.ggml.pre`` value; ``None`` or ``""`` is llama.cpp's
    ``"default"`` (as llama.cpp does, with its warning that quality suffers).

    >>> pre_tokenizer_spec("no-such-pre")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    core.errors.FormatError: model.gguf: tokenizer.ggml.pre is 'no-such-pre', a pre-tokenizer ...
    """
    name = pre or "default"
    row = PRE_NAMES.get(name)
    if row is None:
        raise FormatError(
            f"{file_name}: tokenizer.ggml.pre is {name!r}, a pre-tokenizer llama.cpp (as of "
            "this playground) does not know; load the model's tokenizer.json instead"
        )
    key, flags = row
    if key in _CUSTOM_CODE:
        raise FormatError(
            f"{file_name}: the {name!r} pre-tokenizer is hand-written code in llama.cpp, not "
            "regexes, and the playground does not reproduce it; load the model's "
            "tokenizer.json instead"
        )
    return PreTokenizerSpec(
        name, key, PRE_REGEXES[key], ignore_merges="ignore_merges" in flags,
        add_bos="add_bos" in flags, no_bos="no_bos" in flags, byte_level=key not in _RAW_UTF8,
    )
