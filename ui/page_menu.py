"""The sidebar's page menu as one HTML element.

Streamlit's own menu is hidden (``client.showSidebarNavigation``: it would call the home page
"app"), so every page draws this one on every run. As eight ``st.page_link`` elements it cost
each rerun about 1 ms of the server's one GIL (a ninth of a Tokenize rerun by link, py-spy
under ``benchmarks/load_protocol.py``); as one ``st.html`` block it costs one element.

The links are plain ``<a href>`` to each page's path, relative to the page shown (so a
server under a path prefix works), and a middle click or Ctrl+click opens a new tab as
usual. A plain click changes page the way the browser's back and forward buttons do: the
script puts the page's address in the history and tells Streamlit (a ``popstate`` event),
which asks the server for that page over the same session: no reload, the session and its
work kept, as ``st.page_link`` does.

A Streamlit whose ``st.html`` runs no script (the static build's stlite), or the static
build itself (one page on a static host), keeps ``st.page_link``.

>>> menu = html_menu("Decode")
>>> menu.startswith('<nav class="tp-nav" aria-label="Pages"><a href="./"><span class="tp-nav-icon"')
True
>>> '<a href="Decode" aria-current="page">' in menu, menu.count('aria-current="page"')
(True, 1)
"""

from __future__ import annotations

import html

from ui import site

__all__ = ["html_menu"]

_CSS = """<style>
.tp-nav{display:flex;flex-direction:column;gap:.125rem}
.tp-nav a{display:flex;align-items:center;gap:.5rem;padding:.2rem .5rem;border-radius:.5rem;
 color:inherit;text-decoration:none;line-height:1.8;font-size:.95rem}
.tp-nav a:hover{background:rgba(151,166,195,.15)}
.tp-nav a[aria-current=page]{background:rgba(151,166,195,.25);font-weight:600}
.tp-nav-icon{width:1.25rem;text-align:center}
</style>"""

# A plain click: the page's address into the history, then the event the back button sends,
# which Streamlit answers by asking for the page at that address (frontend App.onHistoryChange).
_JS = """<script>(s => { s.parentElement.addEventListener('click', e => {
  const a = e.target.closest('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey
      || e.altKey) return;
  e.preventDefault();
  if (a.href !== location.href) history.pushState(null, '', a.href);
  window.dispatchEvent(new PopStateEvent('popstate', {state: history.state}));
}); })(document.currentScript)</script>"""


def _href(page: site.Page) -> str:
    """A page's address relative to any page's (they all sit side by side under the app's
    root, which is Home's)."""
    return page.url_path or "./"


def html_menu(current: str) -> str:
    """The menu's HTML: a link per page (:data:`ui.site.PAGES`), ``current`` marked as the
    page shown; its style and script. Titles and icons are the app's own constants."""
    links = []
    for page in site.PAGES:
        here = ' aria-current="page"' if page.title == current else ""
        links.append(f'<a href="{html.escape(_href(page))}"{here}><span class="tp-nav-icon" '
                     f'aria-hidden="true">{page.icon}</span>{html.escape(page.title)}</a>')
    return f'<nav class="tp-nav" aria-label="Pages">{"".join(links)}{_JS}</nav>{_CSS}'
