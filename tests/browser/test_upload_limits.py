"""Every uploader's drop zone says this server's upload limit (TOKPLAY_MAX_UPLOAD_MB, 50 MB),
as chromium shows it: not Streamlit's "100MB per file" (the uploaders let files up to twice the
limit through on purpose, so the page says in its own words why a file is too large). A file
over the limit still gets that message. Waits for content, never for time."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import AppBrowser

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

#: What the drop zone of the uploader with the st-key class ``key`` shows: Streamlit's own
#: line (its text and font size) and what is drawn in its place (the ::after content).
_DROP_ZONE = """key => {
    const span = document.querySelector(
        `.${key} [data-testid="stFileUploaderDropzoneInstructions"] span`);
    if (!span) return null;
    const after = getComputedStyle(span, '::after');
    return {text: span.textContent, size: getComputedStyle(span).fontSize,
            shown: after.content, shownSize: after.fontSize,
            width: span.getBoundingClientRect().width};
}"""


def drop_zone(app: AppBrowser, key_class: str) -> dict[str, object]:
    app.page.wait_for_function(f"() => ({_DROP_ZONE})({key_class!r})")  # type: ignore[attr-defined]
    return app.page.evaluate(_DROP_ZONE, key_class)  # type: ignore[attr-defined]


def assert_states_our_limit(zone: dict[str, object], note: str) -> None:
    assert zone["text"] == "100MB per file"  # Streamlit's cap: twice ours, on purpose
    assert zone["size"] == "0px"  # ... and not shown
    assert zone["shown"] == f'"{note}"' and zone["shownSize"] == "14px"  # ours in its place
    assert zone["width"] > 50  # type: ignore[operator]


def test_evaluate_and_train_drop_zones_state_our_limit(app: AppBrowser) -> None:
    app.goto("Evaluate")
    assert_states_our_limit(drop_zone(app, "st-key-eva-upload"), "Up to 50.0 MB per file")
    app.screenshot("evaluate-upload-limit", full_page=False)
    app.goto("Train")
    with app.rerun():
        app.page.get_by_text("Upload text files", exact=True).click()  # type: ignore[attr-defined]
    assert_states_our_limit(drop_zone(app, "st-key-train-uploads"), "Up to 50.0 MB in total")
    app.screenshot("train-upload-limit", full_page=False)
    app.assert_healthy()


def test_sidebar_loader_states_our_limit_and_refuses_a_larger_file_in_words(
        app: AppBrowser, tmp_path: Path) -> None:
    app.goto("Tokenize")
    sidebar = app.page.locator('[data-testid="stSidebar"]')  # type: ignore[attr-defined]
    with app.rerun():
        sidebar.get_by_text("Load tokenizer files").click()
    assert_states_our_limit(drop_zone(app, "st-key-ui-sidebar_upload"), "Up to 50.0 MB in total")
    app.screenshot("sidebar-upload-limit", full_page=False)
    big = tmp_path / "big.tiktoken"
    big.write_bytes(b"x" * 50_000_001)  # one byte over: reaches the page, which says why
    with app.rerun():
        sidebar.locator('input[type="file"]').set_input_files([str(big)])
    sidebar.get_by_text("this server accepts at most 50,000,000 bytes").wait_for()
    app.assert_healthy()
