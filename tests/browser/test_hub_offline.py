"""A Hugging Face model that cannot load, typed into Tokenize's 🤗 box on a server that cannot
reach the Hub (the tests' server: ``HF_ENDPOINT`` is a port nothing listens on, its cache is
empty; tests/conftest.py): one line beside the box says why, and the tokenizer in use stays
GPT-2 on this page and the next.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import AppBrowser
from tests.browser.test_hub_picker import BOX, commit_text
from tests.browser.test_reload import active_label, open_from_menu
from tests.browser.test_sharing import chip_ids, picked_tokenizer, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

MODEL = "Qwen/Qwen3-0.6B"
OFFLINE = f"this server cannot reach the Hugging Face Hub and {MODEL} is not cached here"


def alerts(app: AppBrowser) -> list[str]:
    return app.page.locator('[data-testid="stMain"] [data-testid="stAlert"]').all_inner_texts()


def test_a_model_that_cannot_load_keeps_the_tokenizer_in_use(app: AppBrowser) -> None:
    app.goto("Tokenize")
    commit_text(app, "Hello world")
    wait_until(lambda: chip_ids(app) == ["15496", "995"], "GPT-2's chips")
    box = app.page.get_by_placeholder(BOX)
    box.fill(MODEL)
    with app.rerun():
        box.press("Enter")
    wait_until(lambda: any(OFFLINE in a for a in alerts(app)), "the line beside the box")
    (line,) = alerts(app)  # that one line, and no "this page shows another tokenizer" note
    assert line.replace("⚠️", "").strip() == OFFLINE + "; models cached on this server: none"
    alert = app.page.locator('[data-testid="stMain"] [data-testid="stAlert"]').bounding_box()
    text = app.page.get_by_role("textbox", name="Text", exact=True).bounding_box()
    assert box.bounding_box()["y"] < alert["y"] < text["y"]  # beside the box, above the text
    assert picked_tokenizer(app) == "GPT-2 (gpt2)"
    assert active_label(app) == "GPT-2 (gpt2)"
    assert chip_ids(app) == ["15496", "995"]
    app.screenshot("hub-model-cannot-load")
    app.assert_healthy()

    open_from_menu(app, "Decode")  # a later page: still GPT-2, from the sidebar to the IDs
    assert active_label(app) == "GPT-2 (gpt2)"
    assert picked_tokenizer(app) == "GPT-2 (gpt2)"
    ids = app.page.get_by_role("textbox", name="Token IDs", exact=True)
    assert ids.input_value() == "15496, 995"  # the Tokenize text, in GPT-2's IDs
    app.assert_healthy()


def test_a_model_picked_on_decode_or_linked_that_cannot_load_keeps_gpt2(app: AppBrowser) -> None:
    """Decode's picker (ui/widgets.py) and a ``model=`` link: the same rule as the 🤗 box."""
    listed = "Qwen/Qwen3-8B"  # one of the popular models every picker offers
    app.goto("Decode")
    ids = app.page.get_by_role("textbox", name="Token IDs", exact=True)
    wait_until(lambda: ids.input_value() != "", "the sample text's IDs")
    before = ids.input_value()
    picker = app.page.get_by_role("combobox", name="Tokenizer", exact=True)
    picker.click()
    with app.rerun():
        app.page.get_by_role("option", name=f"🤗 {listed}", exact=True).click()
    offline = f"this server cannot reach the Hugging Face Hub and {listed} is not cached here"
    wait_until(lambda: any(offline in a for a in alerts(app)), "the line under the picker")
    (line,) = alerts(app)  # no "this page shows another tokenizer" note
    assert line.replace("⚠️", "").strip() == offline + "; models cached on this server: none"
    assert picked_tokenizer(app) == "GPT-2 (gpt2)"
    assert active_label(app) == "GPT-2 (gpt2)"
    assert ids.input_value() == before
    app.screenshot("hub-model-cannot-load-decode")
    app.assert_healthy()

    app.goto(f"Vocabulary?model={MODEL}")  # a link naming it: its note, and still GPT-2
    wait_until(lambda: any(OFFLINE in a for a in alerts(app)), "the link's note")
    (note,) = [a for a in alerts(app) if OFFLINE in a]
    assert note.endswith("showing “GPT-2 (gpt2)” instead.")
    assert picked_tokenizer(app) == "GPT-2 (gpt2)"
    assert active_label(app) == "GPT-2 (gpt2)"
    app.screenshot("hub-model-link-cannot-load")
    app.assert_healthy()
