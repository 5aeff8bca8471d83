"""GGUF in a real browser: a vocab-only GGUF uploaded in the sidebar shows its chips; on a
server started for one person (``TOKPLAY_LOCAL_MODELS=1``, a fake HOME holding an Ollama
store and an LM Studio folder) the picker offers those models and one opens by its link; on
the shared test server (listing off) the same link says the model is not available here.

The files are llama.cpp's own vocab-only GGUFs, copied into tmp; the expected IDs are its
cases (``.out``: Hugging Face's IDs with ``add_special_tokens=False``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.browser.conftest import AppBrowser, StreamlitServer, browser_session, served_app
from tests.browser.test_hub_picker import commit_text
from tests.browser.test_sharing import chip_ids, copied_link, link_warnings, open_link, params_of, \
    picked_tokenizer, wait_until
from tests.test_formats_gguf import read_cases
from tests.test_gguf_local import ollama_model

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

CASE = 32  # "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～"
OLLAMA_NAME = "phi3:latest"
LMSTUDIO_NAME = "lmstudio-community/gpt2-GGUF/gpt-2.gguf"


def case(vocabs: Path, name: str) -> tuple[str, list[str]]:
    text, ids = read_cases(vocabs / f"ggml-vocab-{name}.gguf")[CASE]
    return text, [str(i) for i in ids]


def test_a_vocab_only_gguf_uploaded_in_the_sidebar_shows_its_chips(
        app: AppBrowser, llama_cpp_vocabs: Path, tmp_path: Path) -> None:
    text, expected = case(llama_cpp_vocabs, "phi-3")
    path = tmp_path / "ggml-vocab-phi-3.gguf"
    shutil.copyfile(llama_cpp_vocabs / path.name, path)
    app.goto("Tokenize")
    commit_text(app, text)
    sidebar = app.page.locator('[data-testid="stSidebar"]')
    with app.rerun():
        sidebar.get_by_text("Load tokenizer files").click()
    with app.rerun():
        sidebar.locator('input[type="file"]').set_input_files([str(path)])
    wait_until(lambda: chip_ids(app) == expected, "the GGUF's chips")
    assert picked_tokenizer(app) == path.name
    app.screenshot("gguf-upload")
    app.assert_healthy()


def test_a_shared_server_lists_no_local_model_and_a_link_says_so(app: AppBrowser) -> None:
    app.goto(f"Tokenize?model={quote('gguf:' + OLLAMA_NAME)}")
    wait_until(lambda: "is not available here: this server does not list local GGUF models"
               in link_warnings(app), "the not-available-here line")
    assert picked_tokenizer(app) == "GPT-2 (gpt2)"
    app.assert_healthy()


# ---- a server for one person: its own HOME, the listing on ----------------------------------


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory,
                 llama_cpp_vocabs: Path) -> Iterator[StreamlitServer]:
    """The app as `make run` starts it on a laptop whose HOME has Ollama and LM Studio models."""
    workdir = tmp_path_factory.mktemp("gguf-server")
    home = workdir / "home"
    ollama_model(home, ("registry.ollama.ai", "library", "phi3", "latest"),
                 (llama_cpp_vocabs / "ggml-vocab-phi-3.gguf").read_bytes())
    lmstudio = home / ".lmstudio" / "models" / LMSTUDIO_NAME
    lmstudio.parent.mkdir(parents=True)
    shutil.copyfile(llama_cpp_vocabs / "ggml-vocab-gpt-2.gguf", lmstudio)
    env = {k: v for k, v in os.environ.items() if k not in ("OLLAMA_MODELS", "TOKPLAY_GGUF_DIRS")}
    env.update(HOME=str(home), TOKPLAY_LOCAL_MODELS="1")
    with served_app(workdir, env) as server:
        yield server


def test_one_person_picks_an_ollama_model_and_its_link_reopens_it(
        browser: object, local_server: StreamlitServer, screenshot_dir: Path,
        llama_cpp_vocabs: Path) -> None:
    text, phi3 = case(llama_cpp_vocabs, "phi-3")
    gpt2 = case(llama_cpp_vocabs, "gpt-2")[1]
    with browser_session(browser, local_server.url, screenshot_dir) as app:
        app.goto(f"Tokenize?text={quote(text)}")
        picker = app.page.get_by_role("combobox", name="Tokenizer", exact=True)
        picker.click()
        with app.rerun():
            app.page.get_by_role("option", name=f"🦙 {OLLAMA_NAME} · Ollama").click()
        wait_until(lambda: chip_ids(app) == phi3, "the Ollama model's chips")
        link = copied_link(app)
        assert params_of(link)["model"] == ["gguf:" + OLLAMA_NAME], link
        app.screenshot("gguf-local-picker")
        app.assert_healthy()
        with browser_session(browser, local_server.url, screenshot_dir) as other:
            open_link(other, link)
            wait_until(lambda: chip_ids(other) == phi3, "the same chips in the new session")
            assert picked_tokenizer(other).startswith(f"🦙 {OLLAMA_NAME}")
            other.goto(f"Tokenize?model={quote('gguf:' + LMSTUDIO_NAME)}&text={quote(text)}")
            wait_until(lambda: chip_ids(other) == gpt2, "the LM Studio model's chips")
            other.goto(f"Tokenize?model={quote('gguf:/etc/hostname')}")
            wait_until(lambda: "never by a path" in link_warnings(other), "the path refused")
            other.assert_healthy()
