"""core.chat against transformers: the same string and the same IDs for real chat templates.

The oracle is ``PreTrainedTokenizerFast.from_pretrained`` on a folder holding the same
``tokenizer.json`` and ``tokenizer_config.json`` our loader reads, so the special tokens the
template sees (``bos_token``...) come from the config on both sides. The tokenizer.json files
are made offline by transformers' converters from the files the oracle packages ship
(Meta's Llama 3 ``tokenizer.model``, Mistral's SentencePiece models), as in
``tests/test_real_models.py``; Qwen's and Gemma's templates run on them with their turn
tokens added as special tokens.
"""

from __future__ import annotations

import copy
import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.chat import ChatTemplate, ChatTemplateError, NoChatTemplateError, apply_chat_template
from core.chat import chat_template_from_files, chat_template_of
from core.errors import FormatError
from core.formats import load_tokenizer_files
from tests import chat_templates as T

# ─── tokenizer.json files, made once ─────────────────────────────────────────────────────


def _llama3_json(extra: list[str]) -> str:
    from llama_models.llama3.tokenizer import Tokenizer as Meta
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path = Path(str(resources.files("llama_models").joinpath("llama3", "tokenizer.model")))
    meta = Meta(path)
    specials = sorted(meta.special_tokens, key=meta.special_tokens.get)
    hf = TikTokenConverter(vocab_file=str(path), pattern=meta.model._pat_str,
                           extra_special_tokens=specials).converted()
    if extra:
        hf.add_special_tokens(extra)
    return hf.to_str()


def _mistral_json(version: str, folder: Path, extra: list[str]) -> str:
    from tokenizers import Tokenizer
    from transformers import LlamaTokenizer

    data = {"v1": "tokenizer.model.v1", "v3": "mistral_instruct_tokenizer_240323.model.v3"}
    source = Path(str(resources.files("mistral_common").joinpath("data", data[version])))
    folder.mkdir()
    shutil.copy(source, folder / "tokenizer.model")
    text = LlamaTokenizer.from_pretrained(str(folder), legacy=False).backend_tokenizer.to_str()
    if not extra:
        return text
    hf = Tokenizer.from_str(text)
    hf.add_special_tokens(extra)
    return hf.to_str()


LLAMA_TOKENS = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
MISTRAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
CHATML = ["<|im_start|>", "<|im_end|>"]

#: key -> (tokenizer.json maker, tokenizer_config.json)
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama3": ("llama3", {"chat_template": T.LLAMA3, **LLAMA_TOKENS}),
    "llama3.1": ("llama3", {"chat_template": T.LLAMA31, **LLAMA_TOKENS}),
    "qwen2.5": ("mistral-v1-extra", {"chat_template": T.QWEN25, "eos_token": "<|im_end|>",
                                  "pad_token": "<|endoftext|>"}),
    "chatml-named": ("mistral-v1-extra", {
        "chat_template": [{"name": "default", "template": T.CHATML_GENERATION},
                          {"name": "tool_use", "template": T.CHATML_TOOLS}],
        "eos_token": {"content": "<|im_end|>", "lstrip": False, "__type": "AddedToken"}}),
    "gemma": ("mistral-v1-extra", {"chat_template": T.GEMMA, **MISTRAL_TOKENS}),
    "mistral-v0.1": ("mistral-v1", {"chat_template": T.MISTRAL_V01, **MISTRAL_TOKENS}),
    "mistral-v0.3": ("mistral-v3", {"chat_template": T.MISTRAL_V03, **MISTRAL_TOKENS}),
}

CONVERSATIONS: dict[str, list[dict[str, Any]]] = {
    "one-user": [{"role": "user", "content": "Hello!"}],
    "system-multi-turn": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And 3+3?"},
    ],
    "multi-turn": [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Bye"}, {"role": "assistant", "content": " See you \n"},
    ],
    "empty-content": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""},
                      {"role": "user", "content": ""}],
    "non-latin": [
        {"role": "user", "content": "我们的数据表明 🇯🇵 👩‍👩‍👧 مرحبا بالعالم"},
        {"role": "assistant", "content": "Привет, мир! नमस्ते"},
        {"role": "user", "content": "  ひらがな\n\n\tカタカナ  "},
    ],
    "special-lookalikes": [
        {"role": "user", "content": "<|eot_id|><|im_start|>system\n[INST] </s> <s>"},
        {"role": "assistant", "content": "<start_of_turn>model <|begin_of_text|>"},
        {"role": "user", "content": "{{ bos_token }} {% raw %} <|im_end|>"},
    ],
    "none-values": [{"role": "user", "content": "x", "name": None, "tool_calls": None}],
}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city, °C",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


@pytest.fixture(scope="module")
def json_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("chat-json")
    return {
        "llama3": _llama3_json([]),
        "mistral-v1": _mistral_json("v1", folder / "v1", []),
        "mistral-v1-extra": _mistral_json("v1", folder / "x", [
            "<start_of_turn>", "<end_of_turn>", *CHATML, "<|endoftext|>"]),
        "mistral-v3": _mistral_json("v3", folder / "v3", []),
    }


@pytest.fixture(scope="module")
def pairs(json_files: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """key -> (ours, oracle): the same two files loaded by core and by transformers."""
    from transformers import PreTrainedTokenizerFast

    out = {}
    loaded: dict[str, Any] = {}
    for key, (maker, config) in MODELS.items():
        folder = tmp_path_factory.mktemp(key)
        (folder / "tokenizer.json").write_text(json_files[maker], encoding="utf-8")
        (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        files = {n: (folder / n).read_bytes() for n in ("tokenizer.json", "tokenizer_config.json")}
        if maker not in loaded:  # the loading is the slow part: once per tokenizer.json
            loaded[maker] = load_tokenizer_files(files)
            ours = loaded[maker]
        else:  # the same tokenizer with this config's template, as the loader attaches it
            ours = copy.copy(loaded[maker])
            ours.chat_template = chat_template_from_files(files)
        out[key] = (ours, PreTrainedTokenizerFast.from_pretrained(str(folder)))
    return out


def _both(ours: Any, oracle: Any, messages: list, **kwargs: Any) -> tuple[Any, Any]:
    """(ours, transformers') result, or the error message each raised."""
    try:
        expected = oracle.apply_chat_template(messages, return_dict=False, **kwargs)
    except Exception as err:  # noqa: BLE001 - the oracle's refusal is the expectation
        expected = ("error", str(err))
    try:
        got = ours.apply_chat_template(messages, **kwargs)  # the tokenizer's own method
    except ChatTemplateError as err:
        got = ("error", str(err))
    return got, expected


# ─── string for string, ID for ID ────────────────────────────────────────────────────────


@pytest.mark.parametrize("generation", [False, True])
@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
@pytest.mark.parametrize("model", list(MODELS))
def test_same_as_transformers(pairs: dict, model: str, conversation: str, generation: bool) -> None:
    ours, oracle = pairs[model]
    messages = CONVERSATIONS[conversation]
    for tokenize in (False, True):
        got, expected = _both(ours, oracle, messages, tokenize=tokenize,
                              add_generation_prompt=generation)
        if isinstance(expected, tuple):  # the template refuses: so do we, with its words
            assert got[0] == "error" and expected[1] in got[1]
        else:
            assert got == expected


@pytest.mark.parametrize("model", ["llama3.1", "qwen2.5", "chatml-named", "mistral-v0.3"])
def test_tools_as_transformers(pairs: dict, model: str) -> None:
    ours, oracle = pairs[model]
    messages = CONVERSATIONS["system-multi-turn"]
    for tokenize in (False, True):
        got, expected = _both(ours, oracle, messages, tokenize=tokenize, tools=TOOLS,
                              add_generation_prompt=True)
        assert got == expected
    assert TOOLS[0]["function"]["name"] in apply_chat_template(ours, messages, tools=TOOLS,
                                                               tokenize=False)


def test_template_kwargs_and_named_templates(pairs: dict) -> None:
    """Extra keyword arguments reach the template; a named template is chosen by name."""
    ours, oracle = pairs["llama3.1"]
    messages = CONVERSATIONS["one-user"]
    got, expected = _both(ours, oracle, messages, tokenize=False, date_string="1 Jan 2030")
    assert got == expected and "1 Jan 2030" in got
    ours, oracle = pairs["chatml-named"]
    assert ours.chat_template.names == ["default", "tool_use"]
    got, expected = _both(ours, oracle, messages, tokenize=False, chat_template="tool_use",
                          tools=[])
    assert got == expected and got.startswith("<|im_start|>system\nTools: []")


def test_issue_oracle_form(json_files: dict[str, str], pairs: dict, tmp_path: Path) -> None:
    """PreTrainedTokenizerFast(tokenizer_file=..., chat_template=...), the issue's oracle."""
    from transformers import PreTrainedTokenizerFast

    path = tmp_path / "tokenizer.json"
    path.write_text(json_files["llama3"], encoding="utf-8")
    oracle = PreTrainedTokenizerFast(tokenizer_file=str(path), chat_template=T.LLAMA3,
                                     **LLAMA_TOKENS)
    ours = pairs["llama3"][0]  # loaded from the same tokenizer.json, with the config
    for messages in CONVERSATIONS.values():
        for generation in (False, True):
            assert apply_chat_template(ours, messages, add_generation_prompt=generation) == \
                oracle.apply_chat_template(messages, add_generation_prompt=generation,
                                           return_dict=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=40), min_size=1, max_size=4), st.booleans())
def test_any_unicode_as_transformers(pairs: dict, contents: list[str], generation: bool) -> None:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]
    for model in ("qwen2.5", "mistral-v0.3"):
        ours, oracle = pairs[model]
        for tokenize in (False, True):
            got, expected = _both(ours, oracle, messages, tokenize=tokenize,
                                  add_generation_prompt=generation)
            assert got == expected


# ─── mistral-common: Mistral's own chat format ───────────────────────────────────────────


def test_mistral_v03_as_mistral_common(pairs: dict) -> None:
    """Mistral 7B v0.3's template renders what mistral-common's v3 tokenizer encodes."""
    from mistral_common.protocol.instruct.messages import (
        AssistantMessage,
        SystemMessage,
        UserMessage,
    )
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    path = resources.files("mistral_common").joinpath("data", "mistral_instruct_tokenizer_240323.model.v3")
    mistral = MistralTokenizer.from_file(str(path))
    ours, _ = pairs["mistral-v0.3"]
    kinds = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage}
    for key in ("one-user", "system-multi-turn", "non-latin"):
        messages = CONVERSATIONS[key]
        request = ChatCompletionRequest(messages=[kinds[m["role"]](content=m["content"])
                                                  for m in messages])
        expected = mistral.encode_chat_completion(request).tokens
        assert apply_chat_template(ours, messages) == expected, key


# ─── where templates come from ───────────────────────────────────────────────────────────


def _small_json() -> bytes:
    """A byte-level tokenizer.json with one special token (quick to load)."""
    from core.formats.hf_json import dumps_hf_json

    vocab = {0: b"<|begin_of_text|>", **{i + 1: bytes([i]) for i in range(256)}}
    return dumps_hf_json(vocab, [], ["<|begin_of_text|>"], pattern="gpt2").encode()


def test_files_beside_tokenizer_json() -> None:
    tokenizer = _small_json()
    config = json.dumps({"chat_template": "A", "bos_token": "<|begin_of_text|>"}).encode()
    # no config: no template, and a clear message
    bare = load_tokenizer_files({"tokenizer.json": tokenizer})
    assert chat_template_of(bare) is None
    with pytest.raises(NoChatTemplateError, match="no chat template"):
        apply_chat_template(bare, [{"role": "user", "content": "x"}])
    # the config's; a chat_template.jinja wins over it, as in transformers
    assert load_tokenizer_files({"tokenizer.json": tokenizer,
                                 "tokenizer_config.json": config}).chat_template.get() == "A"
    both = load_tokenizer_files({"tokenizer.json": tokenizer, "tokenizer_config.json": config,
                                 "chat_template.jinja": b"B{{ bos_token }}"})
    assert both.chat_template.source == "chat_template.jinja"
    assert apply_chat_template(both, [{}], tokenize=False) == "B<|begin_of_text|>"


@pytest.mark.parametrize("config, message", [
    (b"{", "not valid JSON at line 1"),
    (b"[]", "a JSON object was expected"),
    (b'{"chat_template": 3}', "chat_template is int"),
    (b'{"chat_template": [{"name": "x"}]}', r"chat_template\[0\]"),
    (b"\xff", "not UTF-8"),
])
def test_broken_config(config: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        chat_template_from_files({"tokenizer_config.json": config})


def test_bad_conversations() -> None:
    tpl = ChatTemplate.single("{{ messages | length }}", source="test")
    from core.chat import render_chat

    for messages, message in (([], "empty"), ("hi", "list of messages"), ([1], "not a dict"),
                              ([{}] * 1001, "over the limit")):
        with pytest.raises(ChatTemplateError, match=message):
            render_chat(tpl, messages)
    with pytest.raises(ChatTemplateError, match="several chat templates"):
        render_chat(ChatTemplate((("a", "1"), ("b", "2")), "test"), [{}])


@pytest.mark.parametrize("decoder", [False, True])
def test_special_tokens_map_as_transformers(tmp_path: Path, decoder: bool) -> None:
    """special_tokens_map.json names the special tokens when the config is of the older
    layout (no added_tokens_decoder), as transformers reads it."""
    from transformers import PreTrainedTokenizerFast

    config: dict[str, Any] = {"chat_template": "{{ bos_token }}|{{ eos_token }}|{{ messages[0].content }}",
                              "bos_token": "<|begin_of_text|>"}
    if decoder:
        config["added_tokens_decoder"] = {"0": {"content": "<|begin_of_text|>", "special": True}}
    files = {"tokenizer.json": _small_json(), "tokenizer_config.json": json.dumps(config).encode(),
             "special_tokens_map.json": json.dumps({"bos_token": "<s>",
                                                    "eos_token": {"content": "</s>"}}).encode()}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    oracle = PreTrainedTokenizerFast.from_pretrained(str(tmp_path))
    messages = [{"role": "user", "content": "x"}]
    assert apply_chat_template(load_tokenizer_files(files), messages, tokenize=False) == \
        oracle.apply_chat_template(messages, tokenize=False)


def test_chat_capability_is_a_promise(pairs: dict) -> None:
    """capabilities.chat says apply_chat_template works: set with a template (own or
    built in), unset without; byte-level and pipeline tokenizers alike."""
    from core.explain.baselines import WordTokenizer
    from core.interface import ChatTokenizer
    from core.formats.presets import load_preset

    for key in ("llama3", "mistral-v0.3", "gemma"):  # a byte-level Tokenizer, two pipelines
        ours = pairs[key][0]
        assert ours.capabilities.chat and ours.capabilities.details
        assert isinstance(ours, ChatTokenizer)
        assert ours.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False)
    assert load_preset("cl100k_base").capabilities.chat
    bare = load_tokenizer_files({"tokenizer.json": _small_json()})
    for tok in (bare, load_preset("gpt2"), WordTokenizer.train("a b")):
        assert not tok.capabilities.chat and chat_template_of(tok) is None
    with pytest.raises(NoChatTemplateError):
        bare.apply_chat_template([{"role": "user", "content": "x"}])
