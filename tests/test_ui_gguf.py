"""GGUF in the app (ui/local_models.py, the sidebar's uploader, the ``gguf:`` form of the
``model`` link parameter) in AppTest sessions.

A fake HOME holds an Ollama store and an LM Studio folder built from llama.cpp's own
vocab-only GGUFs (copied into tmp). With ``TOKPLAY_LOCAL_MODELS=1`` the pickers offer them
and one opens in place (the loader is handed the blob's path, never a copy); with the
listing off nothing is offered and a link naming one says it is not available here; a link
naming an unlisted model or a path opens nothing. The expected IDs are llama.cpp's cases
(``.out``: Hugging Face's IDs with ``add_special_tokens=False``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.formats import gguf_vocab
from core.formats.gguf import write_gguf
from tests.test_formats_gguf import read_cases
from tests.test_gguf_local import ollama_model
from tests.test_links import open_url, params_of, reopen, the_link, warnings
from ui import local_models
from tests.copy_lines import copied
from tests.sidebar import active_tokenizer

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

OLLAMA_NAME = "phi3:latest"  # llama.cpp's phi-3 vocab (SentencePiece), as Ollama keeps it
LMSTUDIO_NAME = "lmstudio-community/gpt2-GGUF/gpt-2.gguf"  # its gpt-2 vocab (byte-level BPE)
OLLAMA_LABEL = "🦙 " + OLLAMA_NAME
LMSTUDIO_LABEL = "🦙 " + LMSTUDIO_NAME
CASE = 32  # "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～"


class Home:
    """The fake HOME: where each model's file is, and llama.cpp's case for it."""

    def __init__(self, root: Path, vocabs: Path) -> None:
        self.root = root
        phi3 = (vocabs / "ggml-vocab-phi-3.gguf").read_bytes()
        self.ollama_blob = ollama_model(root, ("registry.ollama.ai", "library", "phi3", "latest"),
                                        phi3)
        self.lmstudio_file = root / ".lmstudio" / "models" / LMSTUDIO_NAME
        self.lmstudio_file.parent.mkdir(parents=True)
        shutil.copyfile(vocabs / "ggml-vocab-gpt-2.gguf", self.lmstudio_file)
        self.outside = root / "elsewhere" / "secret.gguf"  # a GGUF in no listed folder
        self.outside.parent.mkdir()
        shutil.copyfile(vocabs / "ggml-vocab-gpt-2.gguf", self.outside)
        self.text, self.phi3_ids = read_cases(vocabs / "ggml-vocab-phi-3.gguf")[CASE]
        self.gpt2_ids = read_cases(vocabs / "ggml-vocab-gpt-2.gguf")[CASE][1]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, llama_cpp_vocabs: Path) -> Home:
    return Home(tmp_path_factory.mktemp("home"), llama_cpp_vocabs)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """What core's GGUF loader was handed during the test (each load starts afresh)."""
    calls: list[Any] = []
    real = gguf_vocab.tokenizer_from_gguf

    def spy(source: Any, **kwargs: Any) -> Any:
        calls.append(source)
        return real(source, **kwargs)

    monkeypatch.setattr(gguf_vocab, "tokenizer_from_gguf", spy)
    local_models.gguf_tokenizer.clear()
    yield calls
    local_models.gguf_tokenizer.clear()


def _server(monkeypatch: pytest.MonkeyPatch, home: Home, *, listing: str | None) -> None:
    monkeypatch.setenv("HOME", str(home.root))
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    monkeypatch.delenv("TOKPLAY_GGUF_DIRS", raising=False)
    if listing is None:
        monkeypatch.delenv(local_models.ENV_ENABLE, raising=False)
    else:
        monkeypatch.setenv(local_models.ENV_ENABLE, listing)
    local_models._scan.clear()


@pytest.fixture
def listing_on(monkeypatch: pytest.MonkeyPatch, home: Home) -> Home:
    _server(monkeypatch, home, listing="1")
    return home


@pytest.fixture
def listing_off(monkeypatch: pytest.MonkeyPatch, home: Home) -> Home:
    _server(monkeypatch, home, listing=None)
    return home


def notes(at: Any) -> str:
    """The page's warnings as the reader sees them (markdown escapes dropped)."""
    return warnings(at).replace("\\", "")


def ids_shown(at: Any, ids: list[int]) -> bool:
    return ", ".join(map(str, ids)) in copied(at)


# ---- listing on: a one-person run -----------------------------------------------------------


def test_the_picker_offers_ollama_and_lm_studio_models_and_opens_one_in_place(
        listing_on: Home, opened: list[Any]) -> None:
    at = open_url("Tokenize", {"text": listing_on.text})
    picker = at.selectbox(key="tok.tokenizer")
    local = [o for o in picker.options if o.startswith("🦙")]
    assert local == [f"{LMSTUDIO_LABEL} · LM Studio, 1.8 MB", f"{OLLAMA_LABEL} · Ollama, 726.0 KB"]
    assert opened == []  # listing reads no tokenizer
    picker.set_value(OLLAMA_LABEL).run()
    assert not at.exception
    assert ids_shown(at, listing_on.phi3_ids)  # llama.cpp's IDs for this text
    assert opened == [str(listing_on.ollama_blob)]  # the blob's own path: read in place
    assert active_tokenizer(at) == (OLLAMA_LABEL, "GGUF model phi3:latest on this machine "
                                    "(Ollama, 726.0 KB), its tokenizer read in place")
    link = the_link(at)
    assert params_of(link)["model"] == ["gguf:" + OLLAMA_NAME] and "tok" not in params_of(link)
    again = reopen(link)
    assert again.selectbox(key="tok.tokenizer").value == OLLAMA_LABEL
    assert ids_shown(again, listing_on.phi3_ids) and not notes(again)
    assert opened == [str(listing_on.ollama_blob)]  # once for the whole server


def test_a_link_opens_an_lm_studio_model_and_compare_takes_both(
        listing_on: Home, opened: list[Any]) -> None:
    at = open_url("Tokenize", {"model": "gguf:" + LMSTUDIO_NAME, "text": listing_on.text})
    assert at.selectbox(key="tok.tokenizer").value == LMSTUDIO_LABEL and not notes(at)
    assert ids_shown(at, listing_on.gpt2_ids)
    assert opened == [str(listing_on.lmstudio_file)]
    both = open_url("Compare", {"tok": "gpt2",
                                "model": ["gguf:" + OLLAMA_NAME, "gguf:" + LMSTUDIO_NAME]})
    assert both.multiselect[0].value == ["GPT-2 (gpt2)", OLLAMA_LABEL, LMSTUDIO_LABEL]
    assert params_of(the_link(both))["model"] == ["gguf:" + OLLAMA_NAME, "gguf:" + LMSTUDIO_NAME]


def test_a_link_naming_a_model_not_in_the_list_opens_nothing(
        listing_on: Home, opened: list[Any]) -> None:
    at = open_url("Tokenize", {"model": "gguf:llama3.2:latest"})
    assert ("The link's model `gguf:llama3.2:latest` is not available here: no local GGUF "
            "model of that name on this server; showing “GPT-2 (gpt2)” instead.") in notes(at)
    assert at.selectbox(key="tok.tokenizer").value == "GPT-2 (gpt2)"
    assert opened == []


@pytest.mark.parametrize("path", ["outside", "../elsewhere/secret.gguf", "~/elsewhere/secret.gguf",
                                  "C:/models/x.gguf"])
def test_a_link_with_a_path_never_opens_it(listing_on: Home, opened: list[Any], path: str) -> None:
    value = str(listing_on.outside) if path == "outside" else path  # a real GGUF file
    at = open_url("Tokenize", {"model": "gguf:" + value})
    assert "is not available here: links name a local model as the picker lists it, never by a " \
           "path; showing “GPT-2 (gpt2)” instead." in notes(at)
    assert opened == []
    bare = open_url("Tokenize", {"model": value})  # not even as a Hub ID
    assert "is not a Hugging Face model ID (org/name)" in notes(bare)
    assert opened == []


def test_the_sidebar_names_a_listed_model_even_with_markup_in_its_name(
        listing_on: Home, opened: list[Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    odd = "<img src=x onerror=alert(1)>.gguf"  # a file name is whatever its owner chose
    shutil.copyfile(listing_on.outside, tmp_path / odd)
    monkeypatch.setenv("TOKPLAY_GGUF_DIRS", str(tmp_path))  # a folder named at server start
    local_models._scan.clear()
    at = open_url("Tokenize", {"model": "gguf:" + odd})
    assert at.selectbox(key="tok.tokenizer").value == "🦙 " + odd
    assert not notes(at) and opened == [str(tmp_path / odd)]
    label, caption = active_tokenizer(at)
    assert label == f"🦙 {odd}"  # shown as typed, never HTML
    assert caption.startswith("GGUF model <img src=x")
    (block,) = [h.proto.body for h in at.sidebar.get("html") if "tp-active" in h.proto.body]
    assert "<img" not in block and "&lt;img src=x onerror=alert(1)&gt;" in block  # escaped


def test_a_listed_model_removed_since_is_not_picked(
        listing_on: Home, opened: list[Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Vocabulary's picker (ui/widgets.py): the bug made the model active while the page
    showed the built-in fallback tokenizer; now one line says why and nothing changes."""
    gone = tmp_path / "gone.gguf"
    shutil.copyfile(listing_on.outside, gone)
    monkeypatch.setenv("TOKPLAY_GGUF_DIRS", str(tmp_path))
    local_models._scan.clear()
    at = open_url("Vocabulary")
    gone.unlink()  # deleted while the page lists it
    at.selectbox(key="voc.tokenizer").set_value("🦙 gone.gguf").run()
    assert not at.exception
    (error,) = [e.value.replace("\\", "") for e in at.error]
    assert error == ("the local model 'gone.gguf' cannot be read any more (removed since it "
                     "was listed?)")
    assert not notes(at)  # no "this page shows another tokenizer" note
    picker = at.selectbox(key="voc.tokenizer")
    assert picker.value == "GPT-2 (gpt2)" and "🦙 gone.gguf" not in picker.options
    assert active_tokenizer(at)[0] == "GPT-2 (gpt2)"  # still the active one
    assert opened == []


# ---- listing off: a shared server -----------------------------------------------------------


def test_with_the_listing_off_nothing_is_offered_and_a_link_says_not_here(
        listing_off: Home, opened: list[Any]) -> None:
    at = open_url("Tokenize", {"model": "gguf:" + OLLAMA_NAME})
    assert not [o for o in at.selectbox(key="tok.tokenizer").options if o.startswith("🦙")]
    assert ("The link's model `gguf:phi3:latest` is not available here: this server does not "
            "list local GGUF models; showing “GPT-2 (gpt2)” instead.") in notes(at)
    assert opened == []
    assert local_models.models() == {}
    with pytest.raises(local_models.LocalModelError, match="does not list local GGUF models"):
        local_models.load(OLLAMA_NAME)  # a label kept from before cannot open it either
    assert opened == []


@pytest.mark.parametrize("flag", ["0", "", "no"])
def test_only_an_explicit_yes_turns_the_listing_on(listing_off: Home, flag: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local_models.ENV_ENABLE, flag)
    assert not local_models.listing_on() and local_models.labels() == []


def test_the_static_build_lists_nothing(listing_on: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKPLAY_RUNTIME", "browser")
    assert local_models.labels() == []


# ---- uploads: a vocab-only GGUF in the sidebar ----------------------------------------------


def upload(at: Any, files: dict[str, bytes]) -> Any:
    at.session_state["ui.loader"] = True
    at.run()
    at.sidebar.get("file_uploader")[0].set_value(
        [(name, data, "application/octet-stream") for name, data in files.items()])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_vocab_only_gguf_uploads_like_any_tokenizer_file(listing_off: Home) -> None:
    data = listing_off.ollama_blob.read_bytes()
    at = upload(open_url("Tokenize", {"text": listing_off.text}), {"ggml-vocab-phi-3.gguf": data})
    assert at.session_state["ui.active"] == "ggml-vocab-phi-3.gguf"
    assert ids_shown(at, listing_off.phi3_ids)
    assert not at.error


@pytest.mark.parametrize(("data", "message"), [
    (b"GGUF\x03\x00\x00\x00", "the file ends at byte 8, inside the header"),
    (b"GGML" + b"\0" * 20, None),  # a wrong magic: not a GGUF at all
    (write_gguf({"general.type": "adapter", "adapter.type": "lora"}),
     "is a LoRA adapter without tokenizer metadata (no tokenizer.ggml.model)"),
])
def test_a_bad_gguf_upload_is_one_line(listing_off: Home, data: bytes, message: str | None) -> None:
    at = upload(open_url("Tokenize"), {"model.gguf": data})
    (error,) = at.error
    assert error.value.startswith("Could not load these files: ")
    assert "\n" not in error.value
    if message is not None:
        assert message in error.value.replace("\\", "")
    assert at.session_state["ui.active"] in (None, "GPT-2 (gpt2)")
