"""A line of text (a link, token IDs) with a button that copies it in one click.

Streamlit's own copy button comes with ``st.code``, whose syntax highlighter is a 1.5 MB
script a browser fetches and compiles before the page counts as drawn: every page showed a
link that way, so every new visitor waited for it (about a second on a 2-core server,
``benchmarks/bench_app.py --parts first``). This line is plain HTML through ``st.html`` with
a few lines of JavaScript for the button (Streamlit runs them only when told to,
``unsafe_allow_javascript``). The text reaches the HTML escaped and the script never reads it
as code: it copies the ``<code>`` element's text.

A Streamlit without scripts in ``st.html`` (the static build's stlite has an older one) gets
``st.code`` back, copy button included.

>>> print(html_line("a<b & c"))  # doctest: +ELLIPSIS
<div class="tp-copy"><code class="tp-copy-text">a&lt;b &amp; c</code><button ...
"""

from __future__ import annotations

import html

import streamlit as st

from ui import html_block, runtime

__all__ = ["COPIED_LABEL", "COPY_LABEL", "html_line", "row_html", "show", "show_row"]

#: The button's accessible name, before and just after a click (what screen readers say).
COPY_LABEL = "Copy to clipboard"
COPIED_LABEL = "Copied"

_CSS = """<style>
.tp-copy{display:flex;align-items:flex-start;gap:.4rem;background:#f4f6fb;border-radius:.5rem;
 padding:.35rem .4rem .35rem .75rem;min-width:0}
.tp-copy-text{flex:1;min-width:0;font-family:"Source Code Pro",ui-monospace,monospace;
 font-size:.85rem;color:#1f2430;background:none;padding:.15rem 0;white-space:pre;
 overflow-x:auto}
.tp-copy.tp-wrap .tp-copy-text{white-space:pre-wrap;overflow-wrap:anywhere}
.tp-copy-button{flex:none;border:1px solid #d5d9e4;background:#fff;border-radius:.35rem;
 color:#1f2430;cursor:pointer;font-size:.8rem;line-height:1;padding:.3rem .4rem;min-width:1.7rem;
 display:flex;align-items:center;justify-content:center;height:1.6rem}
.tp-copy-button:hover,.tp-copy-button:focus-visible{border-color:#5b6cf0;color:#5b6cf0}
.tp-copy-icon{position:relative;width:12px;height:12px;display:inline-block}
.tp-copy-icon::before,.tp-copy-icon::after{content:"";position:absolute;width:8px;height:8px;
 border:1.5px solid currentColor;border-radius:2px;background:inherit}
.tp-copy-icon::before{left:0;top:0}.tp-copy-icon::after{left:4px;top:4px;background:#fff}
</style>"""

#: Two overlapping sheets, drawn in CSS (st.html keeps no SVG; no font has one copy sign everywhere).
_ICON = '<span class="tp-copy-icon" aria-hidden="true"></span>'

# The button copies its row's <code> text: the Clipboard API where the page is a secure
# context (https, localhost), else a hidden textarea and execCommand, which browsers still
# allow on a click (a server reached over plain http by its LAN address).
_JS = """<script>(s => { const row = s.parentElement, b = row.querySelector('button');
const text = row.querySelector('code').textContent, icon = b.innerHTML;
const done = ok => { b.textContent = ok ? '✓' : '!'; b.setAttribute('aria-label', ok ? '%s' : 'Copy failed');
  setTimeout(() => { b.innerHTML = icon; b.setAttribute('aria-label', '%s'); }, 1500); };
const fallback = () => { const t = document.createElement('textarea'); t.value = text;
  t.style.position = 'fixed'; t.style.opacity = '0'; document.body.appendChild(t); t.select();
  let ok = false; try { ok = document.execCommand('copy'); } catch (e) {} t.remove(); done(ok); };
b.addEventListener('click', () => { if (navigator.clipboard && window.isSecureContext)
  navigator.clipboard.writeText(text).then(() => done(true), fallback); else fallback(); });
})(document.currentScript)</script>""" % (COPIED_LABEL, COPY_LABEL)


def html_line(text: str, *, wrap: bool = False) -> str:
    """The HTML of the line: ``text`` escaped in a ``<code>``, then the copy button and its
    script. ``wrap``: long text wraps (IDs) instead of scrolling sideways (a link)."""
    classes = "tp-copy tp-wrap" if wrap else "tp-copy"
    return (f'<div class="{classes}"><code class="tp-copy-text">{html.escape(text)}</code>'
            f'<button type="button" class="tp-copy-button" title="{COPY_LABEL}" '
            f'aria-label="{COPY_LABEL}">{_ICON}</button>{_JS}</div>{_CSS}')


#: The look of :func:`help_mark` (each block that shows one sends it: ``st.html`` blocks share
#: no style sheet of ours).
HELP_CSS = (".tp-help{display:inline-flex;align-items:center;justify-content:center;"
            "width:.85rem;height:.85rem;margin-left:.3rem;border:1px solid currentColor;"
            "border-radius:50%;font-size:.6rem;line-height:1;cursor:help;vertical-align:middle}"
            '.tp-help::after{content:"?"}')
_ROW_CSS = f"""<style>
.tp-copy-row{{display:flex;align-items:center;gap:.5rem;min-width:0}}
.tp-copy-row>.tp-copy{{flex:1}}
.tp-copy-label{{flex:none;font-size:.875rem;color:rgba(49,51,63,.6);white-space:nowrap}}
{HELP_CSS}
</style>"""


def help_mark(help: str) -> str:
    """A small "?" that shows ``help`` on hover (a tooltip shows no Markdown: its backticks
    go), as a widget's help mark does. The "?" is drawn by the style sheet (:data:`HELP_CSS`),
    so the text of the label it follows stays the label alone.

    >>> help_mark("the `IDs` <x>")
    '<span class="tp-help" title="the IDs &lt;x&gt;" aria-label="the IDs &lt;x&gt;" role="img"></span>'
    """
    plain = html.escape(help.replace("`", ""))
    return f'<span class="tp-help" title="{plain}" aria-label="{plain}" role="img"></span>'


def row_html(label: str, text: str, *, key: str, help: str | None = None,
             wrap: bool = False) -> str:
    """A caption-like ``label`` (its ``help`` on hover), then :func:`html_line`, in one
    block: the row ``ui.widgets.copy_row`` draws as one element. ``key`` names the row
    (``data-key``) for a page's tests and styles.

    >>> row = row_html("IDs", "1, 2", key="ids", help="the `IDs`")
    >>> row.startswith('<div class="tp-copy-row" data-key="ids"><span class="tp-copy-label">IDs')
    True
    >>> 'title="the IDs"' in row, html_line("1, 2") in row
    (True, True)
    """
    hint = help_mark(help) if help else ""
    return (f'<div class="tp-copy-row" data-key="{html.escape(key)}"><span class="tp-copy-label">'
            f'{html.escape(label)}{hint}</span>{html_line(text, wrap=wrap)}</div>{_ROW_CSS}')


def show_row(label: str, text: str, *, key: str, help: str | None = None) -> None:
    """Draw :func:`row_html` as one element where ``st.html`` runs the button's script (see
    :func:`show` for the other case, which the caller handles: ``ui.widgets.copy_row``)."""
    html_block.draw(row_html(label, text, key=key, help=help), unsafe_allow_javascript=True,
            width="stretch")


def show(text: str, *, wrap: bool = False) -> None:
    """Draw ``text`` with its copy button (``st.code`` where ``st.html`` runs no script)."""
    if runtime.html_runs_scripts():
        html_block.draw(html_line(text, wrap=wrap), unsafe_allow_javascript=True, width="stretch")
    else:
        st.code(text, language=None, wrap_lines=wrap, width="stretch")
