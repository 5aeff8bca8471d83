"""AppTest for the sidebar's tokenizer upload (ui/widgets.py tokenizer_uploader): files added
to the uploader open alone when they make a tokenizer, else complete the files already
there; several formats of one tokenizer open as one; clashes get one line.

Each ``set_value`` gives the uploader's whole content, as the browser sends it: a file a
user adds comes with the files already there. (tests/browser/test_uploads.py does the same
with llama.cpp's GGUF files in chromium.)
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.formats import export_all
from core.engine.tokenizer import Tokenizer
from core.train import train_bpe
from tests.markdown_text import shown
from tests.test_app_pages import TOKENIZE, open_loader, open_page

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

CORPUS = "the cat sat on the mat. the dog sat on the log. low lower lowest\n" * 20
SPECIAL = "<|endoftext|>"


def trained(vocab_size: int, pattern: str = "gpt2") -> Tokenizer:
    vocab, merges = train_bpe([CORPUS], vocab_size, [SPECIAL], pattern=pattern)
    return Tokenizer(vocab, merges, [SPECIAL], pattern=pattern, name=f"bpe-{vocab_size}")


@pytest.fixture(scope="module")
def downloads() -> dict[str, bytes]:
    """What the Train page offers for one trained tokenizer (its pattern is not GPT-2's, so
    only tokenizer.json encodes like it)."""
    return dict(export_all(trained(290, "cl100k")))


def upload(at: AppTest, files: dict[str, bytes]) -> None:
    uploader = at.sidebar.get("file_uploader")[0]
    uploader.set_value([(name, data, "application/octet-stream") for name, data in files.items()])
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def active(at: AppTest) -> tuple[str, str]:
    """The active tokenizer's label and where it came from."""
    label = at.session_state["ui.active"]
    return label, at.session_state["ui.tokenizers"][label]["source"]


def errors(at: AppTest) -> list[str]:
    return [shown(e.value) for e in at.error]


def test_the_train_pages_downloads_open_as_their_tokenizer_json(
        downloads: dict[str, bytes]) -> None:
    at = open_page(TOKENIZE)
    open_loader(at)
    upload(at, downloads)
    assert errors(at) == []
    label, _ = active(at)
    tok = at.session_state["ui.tokenizers"][label]["tok"]
    assert tok.pattern == "cl100k" and list(tok.special_tokens) == [SPECIAL]


def test_a_pair_completed_in_two_steps_replaces_the_tokenizer_json(
        downloads: dict[str, bytes]) -> None:
    from core.formats import tokenizer_to_pickles

    at = open_page(TOKENIZE)
    open_loader(at)
    first = {"tokenizer.json": downloads["tokenizer.json"]}
    upload(at, first)
    before = active(at)
    pickles = tokenizer_to_pickles(trained(270))
    upload(at, {**first, "vocab.pkl": pickles["vocab.pkl"]})
    assert errors(at) == [
        "Could not load these files: vocab.pkl (a pickle) is half of a pair (vocab.pkl + "
        "merges.pkl, encoder.json + vocab.bpe): add the other half, or remove it to open "
        "tokenizer.json"]
    assert active(at) == before
    upload(at, {**first, **pickles})
    assert errors(at) == []
    label, source = active(at)
    assert source == "uploaded merges.pkl, vocab.pkl"
    assert len(at.session_state["ui.tokenizers"][label]["tok"].vocab) == 270


def test_two_tokenizers_uploaded_at_once_name_the_files_in_one_line(
        downloads: dict[str, bytes]) -> None:
    at = open_page(TOKENIZE)
    open_loader(at)
    upload(at, {"a.json": downloads["tokenizer.json"], "b.json": downloads["tokenizer.json"]})
    assert errors(at) == [
        "Could not load these files: a.json and b.json are 2 Hugging Face tokenizer.json "
        "files, one tokenizer each: remove the one you do not want to open"]
    assert at.session_state["ui.tokenizers"] == {}
