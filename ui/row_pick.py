"""A click on a row of an HTML table types the row's ID into a number input: how the
Vocabulary page picks a token from its list without a data grid.

subtle: why not ``st.dataframe`` and its row selection. The grid is drawn on a canvas by
about 1.2 MB of scripts (the grid, Arrow) that a new visitor's browser fetches and compiles
before the page counts as drawn: a quarter of a bare page's first view on its own, whatever
the rows (``benchmarks/first_view_floor.py``). The list is :mod:`ui.html_table`'s table,
its rows marked with their IDs (``pick``), and this module's script, in an ``st.html`` block
where Streamlit runs scripts (:func:`ui.runtime.html_runs_scripts`), listens at the document
once per page: a click on a row of a table whose box says ``data-pick-into="<class>"`` puts
the row's ID in the number input inside the element of that class as a person typing it
would (React's value setter, then an ``input`` event), and, once React has drawn that, presses
Enter, the number input's commit key: the page reruns with the new value, as if typed. The
script reads the table from the event, so a table drawn again (a rerun, another page of
rows) needs nothing new. Where scripts do not run (the static build's stlite) the rows are
plain and the input is typed in by hand: :func:`clickable` says which, for the caption.
"""

from __future__ import annotations

from ui import html_block, live_input, runtime, state

__all__ = ["SCRIPT", "clickable", "enable", "into"]

#: The listener, set up once per document (``window.tpRowPick``).
SCRIPT = """<span class="tp-row-pick"></span><style>
[data-testid="stElementContainer"]:has(.tp-row-pick){display:none}
</style><script>(() => {
if (window.tpRowPick) return;
window.tpRowPick = true;
document.addEventListener("click", (event) => {
  const row = event.target instanceof Element
    ? event.target.closest("[data-pick-into] tbody tr[data-pick]") : null;
  if (row === null) return;
  const into = row.closest("[data-pick-into]").dataset.pickInto;
  const box = document.querySelector("." + CSS.escape(into) + " input");
  if (box === null || box.disabled) return;
  const setValue = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
  setValue.call(box, row.dataset.pick);
  box.dispatchEvent(new Event("input", { bubbles: true }));
  // Enter commits only what React has seen: let it draw the typed value first
  setTimeout(() => box.dispatchEvent(new KeyboardEvent("keydown", {
    key: "Enter", code: "Enter", bubbles: true, cancelable: true })), 0);
}, true);
})()</script>"""


def into(key: str) -> str:
    """The CSS class a table names (``ui.html_table``'s ``pick``) for a click on a row to
    type into the number input bound to the session value ``key`` (``ui.state.bind``).

    >>> into("voc.token")
    'st-key-_w-voc-token'
    """
    return live_input.key_class(state.bound_widget_key(key))


def clickable() -> bool:
    """Whether a click on a row picks it here (Streamlit runs scripts in ``st.html``)."""
    return runtime.html_runs_scripts()


def enable() -> None:
    """Make this page's pickable tables (``ui.html_table``'s ``pick``) answer clicks; draws
    nothing where scripts do not run."""
    if clickable():
        html_block.draw(SCRIPT, unsafe_allow_javascript=True)
