"""core.services.hub: models by name from a local stand-in for the Hub (tests/hub_stub.py), its cache,
offline, and every refusal. No test reaches the internet: ``HF_ENDPOINT`` points at the stub
and ``HF_HOME`` at a temp folder, and the real ``huggingface_hub`` client does the talking.

The oracle is the same as the file loaders': Hugging Face ``tokenizers`` on the repo's own
``tokenizer.json`` (``add_special_tokens=False``, and ``True`` for the BOS template), and
:func:`core.formats.load_tokenizer_files` on the same files, ID for ID.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.services import hub
from core.errors import HubAccessError, HubError, HubOfflineError
from core.formats import load_tokenizer_files
from tests.conftest import need_module
from tests.hub_stub import (
    GPT2,
    LLAMA3,
    MISTRAL_SP,
    MISTRAL_TEKKEN,
    TOKEN,
    WEIGHTS_ONLY,
    HubStub,
    llama3_tokenizer_json,
    real_repos,
)

TEXTS = [
    "", "Hello, world!", "  leading spaces\n\n\ttabs", "日本語のテキスト 🧩👩‍👩‍👧", "don't WE'LL 1234567",
    "<|begin_of_text|>x<|eot_id|> <s>[INST] hi [/INST]</s> <|endoftext|>",
]  # fmt: skip
_ENV = ("HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
        "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


@pytest.fixture(scope="module")
def llama3_json() -> bytes:
    need_module("transformers")
    return llama3_tokenizer_json()


@pytest.fixture(scope="module")
def stub(llama3_json: bytes) -> Iterator[HubStub]:
    repos, renamed = real_repos(llama3_json=llama3_json)
    server = HubStub(repos, renamed).start()
    yield server
    server.stop()


def _point_at(mp: pytest.MonkeyPatch, stub: HubStub, home: Path) -> None:
    for name in _ENV:
        mp.delenv(name, raising=False)
    mp.setenv("HF_ENDPOINT", stub.url)
    mp.setenv("HF_HOME", str(home))


@pytest.fixture
def hub_env(stub: HubStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stub as the Hub, an empty cache in ``tmp_path``, no token, online. Returns HF_HOME."""
    _point_at(monkeypatch, stub, tmp_path / "hf")
    return tmp_path / "hf"


@pytest.fixture(scope="module")
def llama3(stub: HubStub, tmp_path_factory: pytest.TempPathFactory) -> object:
    """Llama 3 through from_pretrained once (loading a 128k-token tokenizer.json takes seconds)."""
    with pytest.MonkeyPatch.context() as mp:
        _point_at(mp, stub, tmp_path_factory.mktemp("hf-llama3"))
        mp.setenv("HF_TOKEN", TOKEN)
        return hub.from_pretrained(LLAMA3)


@pytest.fixture(scope="module")
def llama3_oracle(llama3_json: bytes) -> object:
    return need_module("tokenizers").Tokenizer.from_str(llama3_json.decode("utf-8"))


# ─── the same tokenizer as the files give ──────────────────────────────────────────────


def test_llama3_by_name_is_tokenizers_on_its_tokenizer_json(llama3, llama3_oracle, llama3_json):
    files_tok = load_tokenizer_files({"tokenizer.json": llama3_json})
    for text in TEXTS:
        expected = llama3_oracle.encode(text, add_special_tokens=False).ids
        assert llama3.encode(text) == expected == files_tok.encode(text)
        # the BOS template stays as the file gives it
        with_bos = llama3_oracle.encode(text, add_special_tokens=True).ids
        assert llama3.encode(text, add_special_tokens=True) == with_bos
        assert llama3.decode(expected) == llama3_oracle.decode(expected, skip_special_tokens=False)
    assert llama3.template == files_tok.template and llama3.template.text == "<|begin_of_text|> $A"
    assert llama3.name == LLAMA3


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_llama3_by_name_equals_tokenizers_on_any_text(llama3, llama3_oracle, text):
    assert llama3.encode(text) == llama3_oracle.encode(text, add_special_tokens=False).ids


@pytest.mark.parametrize("repo_id", [GPT2, MISTRAL_SP, MISTRAL_TEKKEN])
def test_other_layouts_load_as_their_files_do(stub, hub_env, repo_id):
    files = {name: data for name, data in stub.repos[repo_id].files.items()
             if name in hub.choose_files(stub.repos[repo_id].files)}
    ours, from_files = hub.from_pretrained(repo_id), load_tokenizer_files(files)
    assert ours.name == repo_id and type(ours) is type(from_files)
    assert ours.template == from_files.template  # BOS as the file loaders give it
    for text in TEXTS:
        for special in (False, True):
            assert ours.encode(text, add_special_tokens=special) == from_files.encode(
                text, add_special_tokens=special)


def test_the_mistral_sentencepiece_model_matches_sentencepiece(stub, hub_env):
    spm = need_module("sentencepiece")
    sp = spm.SentencePieceProcessor(model_proto=stub.repos[MISTRAL_SP].files["tokenizer.model"])
    tok = hub.from_pretrained(MISTRAL_SP)
    for text in TEXTS:
        assert tok.encode(text) == sp.encode(text)
        assert tok.encode(text, add_special_tokens=True) == sp.encode(text, add_bos=True)


def test_a_renamed_repo_follows_the_hub_redirect_and_gpt2_matches_tiktoken(stub, hub_env, tiktoken_cache):
    tiktoken = need_module("tiktoken")
    enc = tiktoken.get_encoding("gpt2")
    tok = hub.from_pretrained("gpt2")  # the Hub answers 307 to openai-community/gpt2
    for text in TEXTS:
        assert tok.encode(text) == enc.encode(text, allowed_special="all")
    assert hub.cached_models() == ["gpt2"]


def test_only_tokenizer_files_are_fetched_never_weights(stub, hub_env, llama3, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    before = len(stub.requests)
    for repo_id in (LLAMA3, GPT2, MISTRAL_SP, MISTRAL_TEKKEN):
        hub.fetch_tokenizer_files(repo_id)
    fetched = {p.rsplit("/", 1)[-1] for _, p in stub.requests[before:] if "/resolve/" in p}
    assert fetched == {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                       "vocab.json", "merges.txt", "tokenizer.model", "tekken.json"}
    assert not any("original/" in p for _, p in stub.requests[before:])


def test_a_revision_by_commit_hash(stub, hub_env):
    sha = stub.repos[GPT2].sha
    assert hub.from_pretrained(GPT2, revision=sha).encode("hi there") == [5303, 612]
    assert hub.from_pretrained(GPT2, revision=sha).name == f"{GPT2}@{sha}"


# ─── offline: the cache ────────────────────────────────────────────────────────────────


def test_offline_after_one_fetch_loads_from_the_cache(stub, hub_env, monkeypatch):
    online = hub.from_pretrained(MISTRAL_TEKKEN)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(stub.requests)
    offline = hub.from_pretrained(MISTRAL_TEKKEN)
    assert stub.requests[before:] == []  # not one request
    assert [offline.encode(t) for t in TEXTS] == [online.encode(t) for t in TEXTS]
    assert hub.cached_models() == [MISTRAL_TEKKEN]


def test_with_the_hub_unreachable_the_cache_still_serves(hub_env, tmp_path, monkeypatch):
    repos, renamed = real_repos(llama3_json=b"{}")
    own = HubStub({GPT2: repos[GPT2]}, renamed).start()
    monkeypatch.setenv("HF_ENDPOINT", own.url)
    online = hub.from_pretrained(GPT2)
    own.stop()  # nothing listens on that port any more
    assert hub.from_pretrained(GPT2).encode("Hello world") == online.encode("Hello world")
    with pytest.raises(HubOfflineError) as err:
        hub.from_pretrained(MISTRAL_SP)
    assert str(err.value) == (
        f"offline ({own.url} cannot be reached) and {MISTRAL_SP} is not in the local Hugging "
        f"Face cache ({hub_env / 'hub'}); cached models: {GPT2}")


def test_cached_models_lists_only_repos_with_tokenizer_files(stub, hub_env):
    from huggingface_hub import hf_hub_download

    assert hub.cached_models() == []
    hf_hub_download(WEIGHTS_ONLY, "config.json", cache_dir=str(hub_env / "hub"), endpoint=stub.url)
    hub.from_pretrained(GPT2)
    assert hub.cached_models() == [GPT2]


# ─── refusals: one line each ────────────────────────────────────────────────────────────


def _one_line(err: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(err.value)
    assert "\n" not in message and len(message) < 600, message
    return message


@pytest.mark.parametrize("bad", [
    "", " ", "a/b/c", "../etc", "..", "a/..", "/abs", "abs/", "org/-x", "org/x.", "a--b/c",
    "a\\b", "a b/c", "a..b/c", "x" * 97, "ünï/code", "org/name\n", "~/x", "./x", 3, None, ["a/b"],
])  # fmt: skip
def test_a_malformed_id_is_refused_before_any_request(stub, hub_env, bad):
    before = len(stub.requests)
    with pytest.raises(HubError) as err:
        hub.from_pretrained(bad)
    assert "is not a Hugging Face model ID: write it as org/name" in _one_line(err)
    assert stub.requests[before:] == [] and not hub_env.exists()


@pytest.mark.parametrize("bad", ["../main", "/main", "main/", "a//b", "a b", "x" * 129, 7])
def test_a_malformed_revision_is_refused(stub, hub_env, bad):
    with pytest.raises(HubError) as err:
        hub.from_pretrained(GPT2, revision=bad)
    assert "is not a revision: give a branch, a tag or a commit hash" in _one_line(err)


def test_an_unknown_repo_is_named(stub, hub_env):
    with pytest.raises(HubAccessError) as err:
        hub.from_pretrained("nobody/no-such-model")
    assert _one_line(err).startswith(f"no model named nobody/no-such-model on {stub.url}: "
                                     "check the name")


def test_an_unknown_revision_is_named(stub, hub_env):
    with pytest.raises(HubError) as err:
        hub.from_pretrained(GPT2, revision="v9")
    assert _one_line(err) == f"{GPT2} has no revision 'v9': give a branch, tag or commit it has"


def test_a_repo_without_tokenizer_files_lists_what_it_has(stub, hub_env):
    with pytest.raises(HubError) as err:
        hub.from_pretrained(WEIGHTS_ONLY)
    assert _one_line(err) == (
        f"{WEIGHTS_ONLY} has no tokenizer files (tokenizer.json, tokenizer.model, tekken.json "
        "or vocab.json + merges.txt); it has: .gitattributes, config.json, model.safetensors")


def test_a_gated_repo_says_a_token_is_needed(stub, hub_env):
    with pytest.raises(HubAccessError) as err:
        hub.from_pretrained(LLAMA3)
    message = _one_line(err)
    assert message.startswith(f"{LLAMA3} is a gated model") and "token is needed" in message
    assert "HF_TOKEN" in message and "huggingface-cli login" in message


def test_offline_and_not_cached_says_so_and_lists_the_cache(stub, hub_env, monkeypatch):
    hub.from_pretrained(GPT2)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubOfflineError) as err:
        hub.from_pretrained(MISTRAL_SP)
    assert _one_line(err) == (
        f"offline (HF_HUB_OFFLINE is set) and {MISTRAL_SP} is not in the local Hugging Face "
        f"cache ({hub_env / 'hub'}); cached models: {GPT2}")


def test_a_file_too_large_is_refused_before_download(stub, hub_env, monkeypatch):
    monkeypatch.setattr(hub, "MAX_FILE_BYTES", 1000)
    before = len(stub.requests)
    with pytest.raises(HubError) as err:
        hub.from_pretrained(MISTRAL_SP)
    assert _one_line(err) == (f"{MISTRAL_SP}'s tokenizer.model is 0 MB, more than the 0 MB a "
                              "tokenizer file may have here")
    assert not any("/resolve/" in p for _, p in stub.requests[before:])


def test_without_huggingface_hub_one_line_names_the_package(hub_env, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(HubError) as err:
        hub.from_pretrained(GPT2)
    assert _one_line(err).startswith("loading a model by name needs the huggingface_hub package")
    assert _one_line(err).endswith(": pip install huggingface_hub")


def test_core_imports_without_huggingface_hub():
    code = ("import sys; sys.modules['huggingface_hub'] = None\n"
            "import core\n"
            "try:\n    core.from_pretrained('Qwen/Qwen3-8B')\n"
            "except core.HubError as err:\n    print(type(err).__name__, err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("HubError loading a model by name needs the huggingface_hub")
