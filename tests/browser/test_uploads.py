"""The sidebar's tokenizer upload in a real browser: a second tokenizer added to the uploader
replaces the first (no error), and any file name is taken, the content deciding.

The tokenizers are llama.cpp's vocab-only GGUFs (copied into tmp); the expected IDs are its
cases (``.out``: Hugging Face's IDs), as in test_gguf_app.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.browser.conftest import AppBrowser
from tests.browser.test_gguf_app import case
from tests.browser.test_hub_picker import commit_text
from tests.browser.test_sharing import chip_ids, picked_tokenizer, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

ALERT_TEXT = '[data-testid="stMarkdownContainer"]'  # an alert's text, not its icon


def sidebar_upload(app: AppBrowser, path: Path) -> None:
    """Pick ``path`` in the sidebar's uploader, as "Browse files" does: it is added to the
    files already there."""
    sidebar = app.page.locator('[data-testid="stSidebar"]')
    with app.rerun():
        sidebar.locator('input[type="file"]').set_input_files([str(path)])


def open_loader(app: AppBrowser) -> None:
    with app.rerun():
        app.page.locator('[data-testid="stSidebar"]').get_by_text("Load tokenizer files").click()


def sidebar_errors(app: AppBrowser) -> list[str]:
    sidebar = app.page.locator('[data-testid="stSidebar"]')
    return sidebar.locator(f'[data-testid="stAlertContentError"] {ALERT_TEXT}').all_inner_texts()


def test_a_second_tokenizer_added_to_the_uploader_replaces_the_first(
        app: AppBrowser, llama_cpp_vocabs: Path, tmp_path: Path) -> None:
    text, llama = case(llama_cpp_vocabs, "llama-bpe")
    assert case(llama_cpp_vocabs, "phi-3")[0] == text  # (llama.cpp tests both on one text)
    phi3 = case(llama_cpp_vocabs, "phi-3")[1]
    assert llama != phi3
    first, second = tmp_path / "ggml-vocab-llama-bpe.gguf", tmp_path / "ggml-vocab-phi-3.gguf"
    for path in (first, second):
        shutil.copyfile(llama_cpp_vocabs / path.name, path)
    app.goto("Tokenize")
    commit_text(app, text)
    open_loader(app)
    sidebar_upload(app, first)
    wait_until(lambda: chip_ids(app) == llama, "llama-bpe's chips")
    assert picked_tokenizer(app) == first.name

    sidebar_upload(app, second)
    wait_until(lambda: chip_ids(app) == phi3, "phi-3's chips")
    sidebar = app.page.locator('[data-testid="stSidebar"]')
    assert sidebar.locator('[data-testid="stFileChip"]').count() == 2  # both in the uploader
    assert picked_tokenizer(app) == second.name
    assert sidebar_errors(app) == []
    app.screenshot("upload-second-tokenizer")
    app.assert_healthy()


def test_a_tokenizer_file_named_bin_loads(
        app: AppBrowser, llama_cpp_vocabs: Path, tmp_path: Path) -> None:
    text, phi3 = case(llama_cpp_vocabs, "phi-3")
    path = tmp_path / "tok.bin"  # (an extension Streamlit's type filter refused)
    shutil.copyfile(llama_cpp_vocabs / "ggml-vocab-phi-3.gguf", path)
    app.goto("Tokenize")
    commit_text(app, text)
    open_loader(app)
    sidebar_upload(app, path)
    wait_until(lambda: chip_ids(app) == phi3, "the .bin file's chips")
    assert picked_tokenizer(app) == "tok.bin"
    assert sidebar_errors(app) == []
    app.assert_healthy()


def test_a_junk_bin_file_gets_our_one_line_message(app: AppBrowser, tmp_path: Path) -> None:
    path = tmp_path / "junk.bin"
    path.write_bytes(b"\x00\x01\x02 not a tokenizer \xff\xfe")
    app.goto("Tokenize")
    open_loader(app)
    sidebar_upload(app, path)
    sidebar = app.page.locator('[data-testid="stSidebar"]')
    sidebar.locator('[data-testid="stAlertContentError"]').first.wait_for()
    [message] = sidebar_errors(app)
    assert message.startswith(
        "Could not load these files: cannot tell which tokenizer format this file is: "
        "junk.bin (not a tokenizer file). Give one of: vocab.pkl + merges.pkl"), message
    assert "\n" not in message
    sidebar.locator('[data-testid="stAlertContentError"]').first.scroll_into_view_if_needed()
    app.screenshot("upload-junk-bin", full_page=False)
    app.assert_healthy()
