"""What the screen showed when a button was clicked: :func:`shown_at_click`.

Train's Pause and Stop must keep the merge count on screen at the click. The server cannot
know it: what it drew last may still be on its way to the browser, and at full speed a poll
is hundreds of merges. Even a widget's value drawn with the line can trail it: the browser
takes a widget's new value from the server after it has painted its label.

So the browser says it. A small ``st.components.v2`` script (no HTML, like
``ui.live_input``) listens for clicks at the document, in the capture phase, before the
button's own handler: it reads the count in the progress line as it is on screen, in the
same JavaScript task as the click, and sends it as a trigger value. Its message leaves before
the button's, so the run that handles the button has it: in the same run (Streamlit merges
the two requests) or kept from the run before (:func:`shown_at_click`).

Without the script (AppTest, a browser that blocks it), nothing is reported and the page
falls back to what it drew last.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

__all__ = ["shown_at_click"]

_REPORT = "ui.click_probe.report"  # (button, count, job, monotonic time) of the last click
_FRESH_SECONDS = 30.0  # a report older than this belongs to some other click

# Reports clicks on the buttons ``data.buttons`` names (their st-key classes) with the
# merge count the progress line ``data.line`` shows at that moment.
_JS = """
export default function ({ data, setTriggerValue }) {
  const onClick = (event) => {
    for (const [name, cls] of Object.entries(data.buttons)) {
      if (!(event.target instanceof Element) || !event.target.closest("." + cls + " button")) {
        continue;
      }
      const line = document.querySelector("." + data.line);
      const match = line && line.textContent.match(/Merges ([\\d,]+) \\//);
      const shown = match ? parseInt(match[1].replaceAll(",", ""), 10) : (line ? 0 : -1);
      setTriggerValue("click", { button: name, shown: shown });
    }
  };
  document.addEventListener("click", onClick, true);
  return () => document.removeEventListener("click", onClick, true);
}
"""

# The component draws nothing; its element would still add a gap: hide it.
# (subtle: written on several lines, as Streamlit takes a one-line string with "[" for a path)
_CSS = """
[data-testid="stElementContainer"]:has(.tp-click-probe) {
  display: none;
}
"""


def _component() -> Any:
    """Registered on every call, as ``ui.live_input`` explains (runtimes forget it)."""
    return st.components.v2.component(
        "tokplay_click_probe", html='<span class="tp-click-probe"></span>', css=_CSS, js=_JS,
        isolate_styles=False)


def watch(*, key: str, buttons: dict[str, str], line: str, job: str) -> None:
    """Mount the probe (once per run, before the buttons): ``buttons`` maps a name to the
    st-key class of a button, ``line`` is the class of the element holding the progress
    line. A click reported in this run is kept for :func:`shown_at_click`."""
    result = _component()(key=key, height=0, data={"buttons": buttons, "line": line},
                          on_click_change=lambda: None)
    click = getattr(result, "click", None)
    if isinstance(click, dict) and isinstance(click.get("shown"), int) and click["shown"] >= 0:
        st.session_state[_REPORT] = (str(click.get("button")), click["shown"], job,
                                     time.monotonic())


def shown_at_click(button: str, job: str) -> int | None:
    """The merge count on screen when ``button`` was clicked for ``job`` (taken: each report
    answers one click), or None when the browser did not report it."""
    report = st.session_state.pop(_REPORT, None)
    if report is None:
        return None
    name, shown, job_of_report, at = report
    if name != button or job_of_report != job or time.monotonic() - at > _FRESH_SECONDS:
        return None
    return int(shown)
