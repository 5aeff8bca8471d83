"""Live typing (issue 11): Tokenize, Compare and Decode update while the user types.

Each test types with ``keyboard.type`` (a pause between keys, well under the debounce of
``ui.live_input``), presses neither Enter nor anything else, keeps the focus in the box,
and waits for the page to show what ``core`` gives for the typed text. Every wait is for
content (``wait_for_function`` with a timeout), never for a time window.

Debouncing is checked by counting the script runs the browser asks for (``rerun_script``
messages on Streamlit's websocket): a phrase typed quickly is one commit, not one per key.
A loaded machine may stall a key past the debounce, which rightly commits once more, so the
allowance counts the pauses the page itself saw between input events (:class:`_Pauses`)
rather than guessing a fixed slack.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core import load_preset
from tests.browser.conftest import RUN_TIMEOUT_MS, AppBrowser
from ui.live_input import DEBOUNCE_MS, LONG_DEBOUNCE_MS

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

#: A quick typist's pause between keys (ms): a phrase typed like this is one commit.
KEY_DELAY_MS = 40
#: A gap between two input events at least this long (ms, the page's clock) may have let
#: the debounce fire. Half the debounce: the timer fires no earlier than DEBOUNCE_MS after
#: the input that set it, and the next input's listener runs after the timer if it fired,
#: so a commit between two inputs always shows as a gap of nearly DEBOUNCE_MS or more.
PAUSE_MS = DEBOUNCE_MS / 2

_RECORD_INPUTS = """() => {
    window.__tpInputs = [];
    document.addEventListener("input", () => window.__tpInputs.push(performance.now()), true);
}"""
_COUNT_PAUSES = """(pause) => window.__tpInputs.slice(1)
    .filter((t, i) => t - window.__tpInputs[i] >= pause).length"""

_METRIC = """([label, value]) => [...document.querySelectorAll('.tp-stat')]
    .some(m => m.querySelector('.tp-stat-label')?.innerText.trim() === label
          && m.querySelector('.tp-stat-value')?.innerText.trim() === value)"""


class _Commits:
    """Script runs the browser asked for since :meth:`reset` (one per committed value)."""

    def __init__(self) -> None:
        self.count = 0

    def reset(self) -> None:
        self.count = 0

    def on_sent(self, payload: bytes | str) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        if isinstance(payload, bytes) and BackMsg.FromString(payload).WhichOneof("type") == "rerun_script":
            self.count += 1


@pytest.fixture
def commits(app: AppBrowser) -> Iterator[_Commits]:
    """Counts commits on the app's websocket (attached before the first page load)."""
    counter = _Commits()
    app.page.on("websocket", lambda ws: ws.on("framesent", counter.on_sent))  # type: ignore[attr-defined]
    yield counter


class _Pauses:
    """The pauses the page saw between the inputs typed since :meth:`start`."""

    def __init__(self, app: AppBrowser) -> None:
        self.app = app

    def start(self) -> None:
        self.app.page.evaluate(_RECORD_INPUTS)  # type: ignore[attr-defined]

    def inputs(self) -> int:
        return int(self.app.page.evaluate("window.__tpInputs.length"))  # type: ignore[attr-defined]

    def count(self) -> int:
        return int(self.app.page.evaluate(_COUNT_PAUSES, PAUSE_MS))  # type: ignore[attr-defined]


def _assert_debounced(commits: _Commits, pauses: _Pauses, keys: int) -> None:
    """One commit for the phrase, plus one per pause the page saw (a stalled key)."""
    assert pauses.inputs() == keys, "every key should be one input event"
    allowed = 1 + pauses.count()
    assert 1 <= commits.count <= allowed, (
        f"{commits.count} runs for {keys} keys typed with {allowed - 1} pauses of {PAUSE_MS} ms")


def _wait_for_metric(app: AppBrowser, label: str, value: str) -> None:
    app.page.wait_for_function(_METRIC, arg=[label, value], timeout=RUN_TIMEOUT_MS)  # type: ignore[attr-defined]


def _wait_for_text(app: AppBrowser, text: str) -> None:
    app.page.wait_for_function(  # type: ignore[attr-defined]
        "t => document.querySelector('[data-testid=\"stMain\"]').innerText.includes(t)",
        arg=text, timeout=RUN_TIMEOUT_MS)


def _type_over(app: AppBrowser, label: str, text: str) -> None:
    """Select the box's text and type ``text`` over it, key by key; no Enter, no blur."""
    box = app.page.get_by_label(label, exact=True)  # type: ignore[attr-defined]
    box.click()
    app.page.keyboard.press("Control+A")  # type: ignore[attr-defined]
    app.page.keyboard.type(text, delay=KEY_DELAY_MS)  # type: ignore[attr-defined]


def _assert_still_typing_in(app: AppBrowser, label: str) -> None:
    """The box kept the focus: nothing blurred it to commit the value."""
    focused = app.page.evaluate("document.activeElement?.getAttribute('aria-label')")  # type: ignore[attr-defined]
    assert focused == label


def _chip_ids(app: AppBrowser) -> list[int]:
    chips = app.page.locator(".tp-chips").first.locator(".tp-chip sub")  # type: ignore[attr-defined]
    return [int(x) for x in chips.all_inner_texts()]


def test_tokenize_updates_while_typing_once_per_pause(app: AppBrowser, commits: _Commits) -> None:
    gpt2 = load_preset("gpt2")
    text = "Live typing, no Enter: the count follows"
    app.goto("Tokenize")
    pauses = _Pauses(app)
    pauses.start()
    commits.reset()
    _type_over(app, "Text", text)
    _wait_for_metric(app, "Characters", f"{len(text):,}")
    _wait_for_metric(app, "Tokens", f"{len(gpt2.encode(text)):,}")
    assert _chip_ids(app) == gpt2.encode(text)
    _assert_still_typing_in(app, "Text")
    app.wait()
    _assert_debounced(commits, pauses, len(text))
    # the address bar follows the text (ui.links.share on the run the pause committed)
    app.page.wait_for_function(  # type: ignore[attr-defined]
        "t => new URLSearchParams(window.location.search).get('text') === t", arg=text,
        timeout=RUN_TIMEOUT_MS)
    app.screenshot("live-typing-tokenize")
    app.assert_healthy()


def test_keys_typed_while_the_page_reruns_are_kept(app: AppBrowser) -> None:
    gpt2 = load_preset("gpt2")
    long_text = "many words " * 1500  # runs of about a second: keys arrive while they run
    tail = "and more keys"
    app.goto("Tokenize")
    box = app.page.get_by_label("Text", exact=True)  # type: ignore[attr-defined]
    box.click()
    app.page.keyboard.press("Control+A")  # type: ignore[attr-defined]
    app.page.keyboard.insert_text(long_text)  # type: ignore[attr-defined]
    _wait_for_metric(app, "Characters", f"{len(long_text):,}")
    # slower than the (long-text) debounce: every key commits while the last run still goes
    app.page.keyboard.type(tail, delay=LONG_DEBOUNCE_MS + 100)  # type: ignore[attr-defined]
    text = long_text + tail
    _wait_for_metric(app, "Characters", f"{len(text):,}")
    _wait_for_metric(app, "Tokens", f"{len(gpt2.encode(text)):,}")
    app.wait()
    assert box.input_value() == text
    app.assert_healthy()


def test_tokenize_updates_after_a_paste(app: AppBrowser) -> None:
    gpt2 = load_preset("gpt2")
    text = "Pasted, several lines:\n  indented 日本語 🧩\n\tand a tab"
    app.goto("Tokenize")
    page = app.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app.base_url)  # type: ignore[attr-defined]
    page.evaluate("t => navigator.clipboard.writeText(t)", text)  # type: ignore[attr-defined]
    page.get_by_label("Text", exact=True).click()  # type: ignore[attr-defined]
    page.keyboard.press("Control+A")  # type: ignore[attr-defined]
    page.keyboard.press("Control+V")  # type: ignore[attr-defined]
    _wait_for_metric(app, "Characters", f"{len(text):,}")
    _wait_for_metric(app, "Tokens", f"{len(gpt2.encode(text)):,}")
    assert _chip_ids(app) == gpt2.encode(text)
    _assert_still_typing_in(app, "Text")
    app.assert_healthy()


def test_no_commit_in_the_middle_of_an_ime_composition(app: AppBrowser, commits: _Commits) -> None:
    gpt2 = load_preset("gpt2")
    app.goto("Tokenize")
    page = app.page
    page.get_by_label("Text", exact=True).click()  # type: ignore[attr-defined]
    page.keyboard.press("Control+A")  # type: ignore[attr-defined]
    page.keyboard.press("Delete")  # type: ignore[attr-defined]
    _wait_for_metric(app, "Tokens", "0")  # the emptied box is committed: a fresh start
    app.wait()
    commits.reset()
    ime = page.context.new_cdp_session(page)  # type: ignore[attr-defined]
    for step in ["n", "に", "にh", "にほ", "にほn", "にほん"]:  # romaji becoming kana
        ime.send("Input.imeSetComposition",
                 {"text": step, "selectionStart": len(step), "selectionEnd": len(step)})
        # the user pauses mid-word, longer than the debounce: still nothing may be committed
        page.wait_for_timeout(3 * DEBOUNCE_MS)  # type: ignore[attr-defined]
    assert commits.count == 0, "a value was committed in the middle of the composition"
    ime.send("Input.insertText", {"text": "日本"})  # the user picks the kanji: composition ends
    _wait_for_metric(app, "Characters", "2")
    _wait_for_metric(app, "Tokens", f"{len(gpt2.encode('日本')):,}")
    app.wait()
    assert commits.count == 1
    app.assert_healthy()


def test_compare_updates_while_typing(app: AppBrowser, commits: _Commits) -> None:
    text = "Compare me live: tokenizers disagree"
    counts = {label: len(load_preset(name).encode(text))
              for label, name in [("GPT-2 (gpt2)", "gpt2"), ("GPT-4 (cl100k_base)", "cl100k_base")]}
    app.goto("Compare")
    pauses = _Pauses(app)
    pauses.start()
    commits.reset()
    _type_over(app, "Text", text)
    for label, n in counts.items():
        _wait_for_text(app, f"{label} · {n:,} tokens")
    _assert_still_typing_in(app, "Text")
    app.wait()
    _assert_debounced(commits, pauses, len(text))
    app.assert_healthy()


def test_decode_ids_box_updates_while_typing(app: AppBrowser, commits: _Commits) -> None:
    gpt2 = load_preset("gpt2")
    ids = [15496, 11, 995, 0, 220, 10163]
    typed = ", ".join(map(str, ids))
    app.goto("Decode")
    pauses = _Pauses(app)
    pauses.start()
    commits.reset()
    _type_over(app, "Token IDs", typed)
    _wait_for_metric(app, "IDs", f"{len(ids):,}")
    _wait_for_metric(app, "Characters", f"{len(gpt2.decode(ids)):,}")
    _assert_still_typing_in(app, "Token IDs")
    app.wait()
    _assert_debounced(commits, pauses, len(typed))
    app.assert_healthy()
