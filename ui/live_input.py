"""Text boxes that update the page while the user types: :func:`text_area`.

Tokenize, Compare and Decode show their result as the text changes, with no Enter and no
click outside. A plain ``st.text_area`` sends its value only on Ctrl+Enter or blur, so
:func:`text_area` draws one and adds a small ``st.components.v2`` component that presses the
box's own commit key (Ctrl+Enter) for it once the user has stopped typing for a moment.

Why this design (issue 11)
--------------------------
- **The widget stays ``st.text_area``.** Its value, ``on_change`` callback, ``ui.state.bind``
  persistence, AppTest handle (``at.text_area(key=...).input(...)``), label, paste, undo and
  screen-reader behaviour are Streamlit's own and unchanged; ``max_chars`` would still work.
- **The commit is the widget's own.** The component dispatches the Ctrl+Enter keydown that
  ``st.text_area`` documents ("Ctrl+Enter to apply"), so Streamlit sends the value, clears
  the box's "unsaved" mark and reruns exactly as when the user presses it.
- **No key is lost while a run is on its way.** Runs now end while the user types on, so
  nothing may send the box an older value: ``ui.state.bind`` sets the widget only when the
  session value differs from it, and ``ui.links.apply_url`` ignores an address this session
  wrote itself (a commit sent before the browser got the previous run's address carries
  the older one).
- **Debounced.** One commit per pause of :data:`DEBOUNCE_MS` in the input (typing, paste,
  drop, delete), not one per keystroke: a phrase typed at 40-60 ms a key is one run. The
  page shows the result one run after the pause (``benchmarks/bench_app.py --parts typing``,
  median from the last key on Tokenize, quiet 2-core machine): 182-213 ms at 150 ms, 151 ms
  at 110 ms (issue 36 asks for 200). Long texts wait :data:`LONG_DEBOUNCE_MS`: each of
  their runs costs more (10,000 characters: about 100-160 ms of server time), so fewer of
  them; 10,000 characters showed 495-525 ms after the last key at 400 ms, 366-372 ms at
  250 ms (asked: 400).
- **IME-safe.** Nothing is committed between ``compositionstart`` and ``compositionend``
  (Japanese, Chinese, Korean input methods, dead keys); the pause starts at the end of the
  composition.
- **Not hand-rolled where Streamlit has it.** ``st.text_input(live=True)`` (Streamlit 1.67)
  does this natively but is one line: these boxes hold multi-line text and ID lists.
  ``streamlit-keyup`` (1.0.0, itself a components-v2 package) is a separate single-line
  ``<input>``: no newlines, no IME handling, and a widget AppTest does not know as a text
  area. The script listens at the document and looks the box up by its ``st-key-`` class
  on every event, so a box React redraws is never a stale reference. It runs as a plain
  ``<script>`` in an ``st.html`` block where Streamlit runs them (issue 36: a component
  element made every rerun heavier by ~1.5 ms and every first view load the components'
  code and Arrow), else as a ``st.components.v2`` component (the static build's stlite).

The limits are unchanged: pages still cut the text to ``TOKPLAY_MAX_TEXT_CHARS`` (with a
warning) after reading it, and the URL follows each commit through ``ui.links.share``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import streamlit as st

from ui import html_block, runtime, state

__all__ = ["DEBOUNCE_MS", "LONG_DEBOUNCE_MS", "LONG_TEXT_CHARS", "key_class", "live", "text_area"]

#: Quiet time after the last input before the box commits (ms).
DEBOUNCE_MS = 110
#: Texts longer than this many characters wait :data:`LONG_DEBOUNCE_MS` instead.
LONG_TEXT_CHARS = 5_000
LONG_DEBOUNCE_MS = 250

# The component: no HTML, one listener set per text box, removed when the box's page goes.
_JS = """
export default function ({ data, parentElement }) {
  const scope = "." + data.box_class;
  let timer = null;
  let composing = false;
  let typed = null;  // the box typed in last: a scope may hold several (ui.chat's messages)
  const ours = (event) => event.target instanceof HTMLTextAreaElement
    && event.target.closest(scope) !== null;
  const commit = () => {
    timer = null;
    const box = typed !== null && typed.isConnected ? typed
      : document.querySelector(scope + " textarea");
    if (box === null || composing) return;
    // st.text_area's own commit key: it sends the value only if the box has unsent input
    box.dispatchEvent(new KeyboardEvent("keydown", {
      key: "Enter", code: "Enter", ctrlKey: true, bubbles: true, cancelable: true }));
  };
  const later = (box) => {
    clearTimeout(timer);
    typed = box;
    const long = box.value.length > data.long_text_chars;
    timer = setTimeout(commit, long ? data.long_debounce_ms : data.debounce_ms);
  };
  const onInput = (event) => {
    if (!ours(event)) return;
    if (composing || event.isComposing) { clearTimeout(timer); return; }  // mid-IME
    later(event.target);
  };
  const onCompositionStart = (event) => {
    if (ours(event)) { composing = true; clearTimeout(timer); }
  };
  const onCompositionEnd = (event) => {
    if (ours(event)) { composing = false; later(event.target); }
  };
  document.addEventListener("input", onInput, true);
  document.addEventListener("compositionstart", onCompositionStart, true);
  document.addEventListener("compositionend", onCompositionEnd, true);
  return () => {
    clearTimeout(timer);
    document.removeEventListener("input", onInput, true);
    document.removeEventListener("compositionstart", onCompositionStart, true);
    document.removeEventListener("compositionend", onCompositionEnd, true);
  };
}
"""

# The component draws nothing; its element would still add a gap under the box: hide it.
# (subtle: written on several lines, as Streamlit takes a one-line string with "[" for a path)
_CSS = """
[data-testid="stElementContainer"]:has(.tp-live-input) {
  display: none;
}
"""



def _commit_while_typing() -> Any:
    """The component, registered on every call: cheap, and it keeps working when a module
    imported once outlives a runtime (Streamlit 1.62, the static build's, forgets components
    registered at import time by an earlier AppTest runtime)."""
    return st.components.v2.component(
        "tokplay_live_input", html='<span class="tp-live-input"></span>', css=_CSS, js=_JS,
        isolate_styles=False)


# The same function as a plain script in an st.html block where Streamlit runs scripts
# (1.5x and later): no component, so a page loads neither the components' code nor Arrow
# for it, and a rerun sends a small constant block instead of a component's element. The
# script sets its listeners up once per document and box class (they look the box up on
# every event), so a block drawn again (a rerun, a page changed and back) adds none.
_BLOCK = """<span class="tp-live-input"></span><style>
[data-testid="stElementContainer"]:has(.tp-live-input){display:none}
</style><script>(() => { const data = %s;
const seen = (window.tpLiveInput = window.tpLiveInput || {});
if (seen[data.box_class]) return;
seen[data.box_class] = true;
(%s)({ data, parentElement: null });
})()</script>"""


def _block_html(box_class: str) -> str:
    """The st.html block that makes the boxes of ``box_class`` commit while the user types."""
    data = json.dumps({"box_class": box_class, "debounce_ms": DEBOUNCE_MS,
                       "long_text_chars": LONG_TEXT_CHARS,
                       "long_debounce_ms": LONG_DEBOUNCE_MS}).replace("</", "<\\/")
    return _BLOCK % (data, _JS.strip().replace("export default function", "function", 1))


def key_class(widget_key: str) -> str:
    """The CSS class Streamlit gives the element of the widget ``widget_key``.

    >>> key_class("_w.tok.text")
    'st-key-_w-tok-text'
    """
    return "st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", widget_key.strip())


def text_area(label: str, key: str, default: str, *, height: int,
              help: str | None = None) -> str:
    """A ``st.text_area`` bound to the session value ``key`` (:func:`ui.state.bind`) that
    updates the page while the user types: a pause of :data:`DEBOUNCE_MS` commits it."""
    bound = state.bind(key, default)
    text = st.text_area(label, height=height, help=help, **bound)
    live(bound["key"])
    return text


def live(widget_key: str) -> None:
    """Make the ``st.text_area`` whose key is ``widget_key`` commit while the user types; or
    every text area inside the container keyed ``widget_key`` (one component for all of
    them: the Chat mode's messages, ``ui.chat``)."""
    if runtime.html_runs_scripts():
        html_block.draw(_block_html(key_class(widget_key)), unsafe_allow_javascript=True)
        return
    _commit_while_typing()(
        key=f"live.{widget_key}", height=0,
        data={"box_class": key_class(widget_key), "debounce_ms": DEBOUNCE_MS,
              "long_text_chars": LONG_TEXT_CHARS, "long_debounce_ms": LONG_DEBOUNCE_MS})
