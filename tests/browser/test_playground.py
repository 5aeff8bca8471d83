"""The playground as a person uses it, in a real browser: train, tokenize, decode, upload.

Each test opens a fresh browser context (a new Streamlit session) on the shared test server.
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path

import pytest

from core import load_preset
from tests.browser.conftest import AppBrowser

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]



def _type(app: AppBrowser, label: str, text: str) -> None:
    """Replace a text area's content and commit it (Ctrl+Enter), then wait for the rerun."""
    box = app.page.get_by_label(label, exact=True)
    box.fill(text)
    with app.rerun():
        box.press("Control+Enter")


def _token_chip_ids(app: AppBrowser) -> list[int]:
    chips = app.page.locator(".tp-chips").first.locator(".tp-chip sub")
    return [int(x) for x in chips.all_inner_texts()]


# ---- Train ---------------------------------------------------------------------------


def _wait_for_merges_shown(app: AppBrowser, *, above: int, below: int) -> int:
    """Wait until the progress line shows a merge count strictly between ``above`` and
    ``below``; return it. Waits for content (the page's own text), never for time."""
    handle = app.page.wait_for_function(
        """([above, below]) => {
            const m = document.body.innerText.match(/Merges ([\\d,]+) \\/ [\\d,]+/);
            if (!m) return null;
            const n = parseInt(m[1].replaceAll(",", ""), 10);
            return n > above && n < below ? n : null;
        }""",
        arg=[above, below],
        timeout=120_000,
    )
    return int(handle.json_value())


def test_training_shows_progress_advancing_and_its_pickles_load_back(
    app: AppBrowser, tmp_path: Path
) -> None:
    from core.train.builtin_corpus import builtin_corpus_text
    from core.formats import load_pickles
    from core.train import train_bpe

    vocab_size = 1000
    final = vocab_size - 256 - 1  # 743 merges: about 7 s at 100 merges/s, so always watchable
    app.goto("Train")
    page = app.page
    size = page.get_by_label("Vocab size", exact=True)
    size.fill(str(vocab_size))
    with app.rerun():
        size.press("Enter")
    with app.rerun():
        page.get_by_text("100 merges/s", exact=True).click()
    page.get_by_role("button", name="Start training").click()

    # two distinct part-way counts, each strictly between 0 and the final count
    first = _wait_for_merges_shown(app, above=0, below=final)
    second = _wait_for_merges_shown(app, above=first, below=final)
    assert 0 < first < second < final

    done_button = page.get_by_role("button", name=re.compile(r"vocab\.pkl"))
    done_button.wait_for(timeout=120_000)
    assert f"Merges {final:,} / {final:,}" in page.locator('[data-testid="stMain"]').inner_text()
    files = {}
    for name in ("vocab.pkl", "merges.pkl"):
        with page.expect_download() as download:
            page.get_by_role("button", name=re.compile(re.escape(name))).click()
        files[name] = tmp_path / name
        download.value.save_as(files[name])
    vocab, merges = load_pickles(files["vocab.pkl"], files["merges.pkl"])

    expected_vocab, expected_merges = train_bpe([builtin_corpus_text()], vocab_size, ["<|endoftext|>"])
    assert merges == expected_merges
    assert vocab == expected_vocab
    app.assert_healthy()


# ---- Tokenize ------------------------------------------------------------------------


def test_typed_text_gives_chips_with_the_right_ids(app: AppBrowser) -> None:
    gpt2 = load_preset("gpt2")
    text = "Hello world, tokenizers! 日本語 and emoji 🧩\n  indented"
    app.goto("Tokenize")
    _type(app, "Text", text)
    assert _token_chip_ids(app) == gpt2.encode(text)
    app.assert_healthy()


def test_script_injection_text_is_shown_as_text(app: AppBrowser) -> None:
    gpt2 = load_preset("gpt2")
    attack = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    app.goto("Tokenize")
    _type(app, "Text", attack)
    page = app.page
    chips = page.locator(".tp-chips").first
    assert _token_chip_ids(app) == gpt2.encode(attack)
    # each chip's own text (its first text node; the <sub> after it is the ID)
    shown = chips.evaluate(
        "el => Array.from(el.querySelectorAll('.tp-chip')).map(c => c.firstChild.textContent).join('')"
    )
    assert shown.replace("·", " ") == attack
    assert page.locator('img[src="x"]').count() == 0
    assert chips.locator("script").count() == 0
    page.wait_for_timeout(500)  # give an injected handler the chance to fire
    assert app.dialogs == []
    app.assert_healthy()


# ---- Decode --------------------------------------------------------------------------


def test_id_255_decodes_to_a_highlighted_replacement_character(app: AppBrowser) -> None:
    app.goto("Decode")
    _type(app, "Token IDs", "[255]")
    marks = app.page.locator(".tp-fffd")
    assert marks.count() == 1
    assert "\ufffd" in marks.first.inner_text()
    # the ID chip that made it carries the same number as the mark
    assert app.page.get_by_text("255").count() > 0
    app.assert_healthy()


def test_bad_ids_are_flagged_with_their_position(app: AppBrowser) -> None:
    app.goto("Decode")
    _type(app, "Token IDs", "15496, abc, 11, 99999999")
    body = app.page.locator('[data-testid="stMain"]').inner_text()
    assert "abc" in body and "item 2" in body.lower()
    assert "Outside the vocab" in body
    app.assert_healthy()


# ---- Vocabulary ----------------------------------------------------------------------


def test_a_click_on_a_vocabulary_row_selects_its_token(app: AppBrowser) -> None:
    """A plain click on any cell of a row of the list (an HTML table: ui.row_pick) types its
    ID into "Token ID", which shows that token and names it in the link."""
    from core.engine.vocab_table import search_rows, vocab_rows

    gpt2 = load_preset("gpt2")
    wanted = search_rows(vocab_rows(gpt2.vocab, gpt2.merges), "ing")[2]  # the third row
    app.goto("Vocabulary?tok=gpt2&q=ing")
    page = app.page
    token_box = page.get_by_label("Token ID", exact=True)
    assert token_box.input_value() != str(wanted.id)
    row = page.locator(f'[data-pick-into] tr[data-pick="{wanted.id}"]')
    assert row.locator("td").nth(1).inner_text() == wanted.token.decode()  # "hing"
    with app.rerun():  # the "left" column (the 5th) of the third row
        row.locator("td").nth(4).click()
    page.wait_for_function(f"() => new URL(location.href).searchParams.get('token') === '{wanted.id}'")
    assert token_box.input_value() == str(wanted.id)
    shown = page.get_by_text(re.compile(r"byte\(s\) · hex")).inner_text()
    assert wanted.token.hex(" ") in shown
    app.assert_healthy()


# ---- Untrusted uploads ---------------------------------------------------------------


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # what an attacker's pickle does: call a function on load
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_upload_is_refused_and_runs_nothing(app: AppBrowser, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    vocab_pkl = tmp_path / "vocab.pkl"
    merges_pkl = tmp_path / "merges.pkl"
    vocab_pkl.write_bytes(pickle.dumps({0: _Evil(marker)}))
    merges_pkl.write_bytes(pickle.dumps([]))

    app.goto("Tokenize")
    page = app.page
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Load tokenizer files").click()
    with app.rerun():
        sidebar.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
            [str(vocab_pkl), str(merges_pkl)]
        )
    error = page.locator('[data-testid="stAlertContentError"]')
    error.first.wait_for()
    message = " ".join(error.all_inner_texts())
    assert "refused" in message and "system" in message, message
    assert not marker.exists(), "the pickle ran code on the server"
    assert app.exceptions() == []


def test_an_upload_over_the_limit_is_refused_in_the_page_saying_why(
    app: AppBrowser, tmp_path: Path
) -> None:
    """One byte over TOKPLAY_MAX_UPLOAD_MB (50 MB, decimal as Streamlit's uploader counts):
    the page says why, in bytes, since both sizes would read "50.0 MB". Streamlit's own
    client-side refusal (a red icon, the reason on hover) would leave the page silent."""
    alert_text = '[data-testid="stMarkdownContainer"]'  # an alert's text, not its icon
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.truncate(50_000_001)  # sparse: NUL bytes, never decoded (refused by size first)
    page = app.page

    app.goto("Train")
    with app.rerun():
        page.get_by_text("Upload text files", exact=True).click()
    main = page.locator('[data-testid="stMain"]')
    with app.rerun():
        main.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(big)])
    error = main.locator(f'[data-testid="stAlertContentError"] {alert_text}')
    error.first.wait_for()
    assert error.all_inner_texts() == [(
        "“big.txt” is 50,000,001 bytes, more than this server's limit of 50,000,000 bytes: it "
        "is left out. Upload less text (or raise TOKPLAY_MAX_UPLOAD_MB).")]
    assert "50.0MB" in main.locator('[data-testid="stFileChip"]').inner_text()  # same unit

    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Load tokenizer files").click()
    with app.rerun():
        sidebar.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files([str(big)])
    error = sidebar.locator(f'[data-testid="stAlertContentError"] {alert_text}')
    error.first.wait_for()
    assert error.all_inner_texts() == [(
        "These files are 50,000,001 bytes together; this server accepts at most 50,000,000 "
        "bytes (TOKPLAY_MAX_UPLOAD_MB). Upload smaller files.")]
    app.assert_healthy()
