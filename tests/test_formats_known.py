"""Real models' files load by content with no other input; unknown rank files ask for a
pattern; formats with a merge list refuse what they cannot hold exactly."""

from __future__ import annotations

import base64
import hashlib
from importlib import resources

import pytest

from core.errors import FormatError, PatternNeededError
from core.formats.detect import export_all, identify_files, load_tokenizer_files
from core.formats.known import KNOWN, known_file
from core.formats.tiktoken_file import load_tiktoken_ranks
from tests.conftest import need_module


def _llama(version: str) -> bytes:
    need_module("llama_models")
    return resources.files("llama_models").joinpath(version, "tokenizer.model").read_bytes()


def _mistral(name: str) -> bytes:
    need_module("mistral_common")
    return resources.files("mistral_common").joinpath("data", name).read_bytes()


@pytest.fixture(scope="module")
def llama3():
    return load_tokenizer_files({"tokenizer.model": _llama("llama3")})


def test_every_known_file_in_the_packages_is_recognised_by_its_sha256():
    files = [_llama("llama3"), _llama("llama4")] + [
        _mistral(n) for n in ("tokenizer.model.v1", "mistral_instruct_tokenizer_240216.model.v2",
                              "mistral_instruct_tokenizer_240323.model.v3",
                              "mistral_instruct_tokenizer_241114.model.v7",
                              "tekken_240718.json", "tekken_240911.json")
    ]  # fmt: skip
    names = [known_file(data).name for data in files]
    assert len(set(names)) == len(names)
    assert {hashlib.sha256(d).hexdigest() for d in files} <= set(KNOWN)


def test_llama3_loads_alone_with_metas_pattern_specials_and_bos(llama3):
    assert llama3.name == "Llama 3 (Meta tokenizer.model)"
    assert llama3.by_rank and llama3.pattern == "llama3"
    assert llama3.special_token_ids["<|begin_of_text|>"] == 128000
    assert llama3.special_token_ids["<|eot_id|>"] == 128009
    assert len(llama3.special_tokens) == 256 and llama3.n_vocab == 128256
    assert llama3.template.prefix == (128000,) and llama3.template.suffix == ()
    text = "Hello world"
    assert llama3.encode(text, add_special_tokens=True) == [128000, *llama3.encode(text)]


def test_llama3_whole_only_tokens_are_reached_as_tiktoken_reaches_them(llama3):
    """b'ektedir' is built by no two lower-ranked tokens (why the old loader refused the
    file): tiktoken still gives it for the whole pre-token, and so do we."""
    tiktoken = need_module("tiktoken")
    ranks = load_tiktoken_ranks(_llama("llama3"))
    enc = tiktoken.Encoding("l3", pat_str=llama3.pretoken_regex.pattern, mergeable_ranks=ranks,
                            special_tokens=llama3.special_token_ids)
    assert len(llama3.whole_only) == 90
    for token in llama3.whole_only:
        text = token.decode("utf-8", "replace")
        if "\ufffd" in text:
            continue
        assert llama3.encode(text) == enc.encode(text, allowed_special="all"), text
        assert llama3.encode("x" + text) == enc.encode("x" + text, allowed_special="all")
    assert llama3.encode("ektedir") == [ranks[b"ektedir"]]


def test_export_refuses_merge_formats_that_would_encode_llama3_differently(llama3):
    exported = export_all(llama3)
    assert set(exported) == {"Llama_3__Meta_tokenizer.model_.tiktoken"}
    assert {f.format for f in exported.failures} == {"CS336 pickles", "GPT-2 files", "Hugging Face"}
    assert all("built by no merge of two lower-ranked tokens" in f.reason for f in exported.failures)
    ranks = load_tiktoken_ranks(next(iter(exported.values())))
    assert ranks == load_tiktoken_ranks(_llama("llama3"))


def test_an_unknown_rank_file_needs_a_pattern_and_loads_with_one():
    lines = _llama("llama3").splitlines()
    lines[-1] = base64.b64encode(b"not in llama").decode().encode() + b" " + lines[-1].split()[1]
    data = b"\n".join(lines)
    with pytest.raises(PatternNeededError, match="Choose its pre-tokenizer pattern: gpt2, cl100k"):
        load_tokenizer_files({"mine.model": data})
    tok = load_tokenizer_files({"mine.model": data}, pattern="cl100k")
    assert tok.pattern == "cl100k" and tok.special_tokens == []
    assert len(tok.encode("not in llama")) == 3  # three pre-tokens
    whole = load_tokenizer_files({"mine.model": data}, pattern=r"[\s\S]+")  # a user's regex
    assert whole.encode("not in llama") == [len(lines) - 1]


def test_openai_rank_files_load_as_the_presets():
    from core.formats.presets import load_preset

    data = load_preset  # noqa: F841 - the shipped files are the genuine ones
    import gzip

    raw = gzip.decompress(resources.files("core").joinpath("data", "o200k_base.tiktoken.gz").read_bytes())
    tok = load_tokenizer_files({"o200k_base.tiktoken": raw})
    assert tok.name == "o200k_base (GPT-4o)"
    assert tok.special_token_ids == load_preset("o200k_base").special_token_ids
    assert tok.encode("Hello world") == [13225, 2375]


def test_the_format_is_told_by_content_not_by_the_file_name():
    assert identify_files({"weights.bin": _llama("llama3")}).kind == "tiktoken"
    assert identify_files({"notes.txt": _mistral("tokenizer.model.v1")}).kind == "sentencepiece"
    assert identify_files({"vocab.json": _mistral("tekken_240718.json")}).kind == "tekken"


def test_tekken_loads_with_its_own_pattern_specials_and_bos():
    tok = load_tokenizer_files({"tekken.json": _mistral("tekken_240911.json")})
    assert tok.name == "Mistral Tekken (Pixtral, tekken_240911)"
    assert tok.pattern == "tekken" and tok.special_token_ids["<s>"] == 1
    assert len(tok.special_tokens) == 1000 and tok.n_vocab == 131072
    # mistral-common reads special-token text as ordinary text
    assert 1 not in tok.encode("<s>[INST]")
    assert tok.encode("hi", add_special_tokens=True)[0] == 1


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b'{"config": {"pattern": "x", "default_vocab_size": 10, '
         b'"default_num_special_tokens": 2}, "vocab": []}', "leaves 8 ordinary tokens"),
        (b'{"config": {"pattern": 5}, "vocab": []}', "'pattern' should be str"),
    ],
)
def test_a_broken_tekken_file_says_what_is_wrong(doc, message):
    with pytest.raises(FormatError, match=message):
        load_tokenizer_files({"tekken.json": doc})
