"""The Vocabulary page's merge tree of a token, down to its bytes: nested boxes in HTML with
the lines between them drawn in CSS, shown by ``st.html`` (Graphviz, which drew it before,
made every new visitor fetch a 0.8 MB script). Every token's text is escaped.
"""

from __future__ import annotations

import html
import unicodedata
from typing import TYPE_CHECKING

from ui.chips import PALETTE, hex_bytes, token_label
from ui.display import merge_number

if TYPE_CHECKING:
    from core.engine.details import MergeNode

__all__ = ["merge_tree_html"]

_TREE_LINE = "#9aa0b4"
#: The boxes and the lines between them: each child draws its half of the bar above it and
#: its own stem, so any number of children of any width connect (no layout computed here).
#: Sizes are in em of the tree's font size, which :func:`merge_tree_html` sets to fit the
#: column (a container query: ``cqw`` is a hundredth of the column's width).
_TREE_CSS = f"""<style>
.tp-mtree{{container-type:inline-size;overflow-x:auto;padding:.25rem 0 .5rem}}
.tp-mtree>.tp-mt-node{{width:max-content;margin:0 auto}}
.tp-mt-node{{display:flex;flex-direction:column;align-items:center;position:relative;
 padding:0 .2em}}
.tp-mt-kids{{display:flex;justify-content:center;align-items:flex-start;position:relative;
 padding-top:.7em}}
.tp-mt-kids::before{{content:"";position:absolute;top:0;left:50%;height:.7em;
 border-left:1px solid {_TREE_LINE}}}
.tp-mt-kids>.tp-mt-node{{padding-top:.7em}}
.tp-mt-kids>.tp-mt-node::before{{content:"";position:absolute;top:0;left:50%;height:.7em;
 border-left:1px solid {_TREE_LINE}}}
.tp-mt-kids>.tp-mt-node::after{{content:"";position:absolute;top:0;left:0;right:0;
 border-top:1px solid {_TREE_LINE}}}
.tp-mt-kids>.tp-mt-node:first-child::after{{left:50%}}
.tp-mt-kids>.tp-mt-node:last-child::after{{right:50%}}
.tp-mt-kids>.tp-mt-node:only-child::after{{display:none}}
.tp-mt-box{{border:1px solid #c9cede;border-radius:.4em;padding:.15em .45em;background:#eeeeee;
 text-align:center;white-space:nowrap;line-height:1.3;color:#1f2430}}
.tp-mt-box.tp-mt-merge{{background:{PALETTE[0]}}}
.tp-mt-box code{{font-family:"Source Code Pro",ui-monospace,monospace;font-size:.95em;
 background:none;color:#1f2430;padding:0;white-space:pre}}
.tp-mt-id{{display:block;font-size:.75em;color:#5c6373}}
.tp-mt-more{{font-size:.8rem;color:#5c6373}}
</style>"""
#: Widths in em, to fit the tree without measuring it: a code character (.95em monospace),
#: an ID line character (.75em sans serif, on average), a box's padding and border, a node's.
_CODE_EM, _ID_EM, _BOX_EM, _NODE_EM = 0.58, 0.31, 1.2, 0.4
#: The tree's font size: what fits the column, within these (smaller: the tree scrolls).
_MIN_PX, _MAX_PX = 9, 14


def _columns(text: str) -> int:
    """How many character widths ``text`` takes (wide East Asian characters take two).

    >>> _columns("ab"), _columns("日本")
    (2, 4)
    """
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _tree_size(node: MergeNode) -> int:
    size, todo = 0, [node]
    while todo:
        cur = todo.pop()
        size += 1
        todo.extend(c for c in (cur.left, cur.right) if c is not None)
    return size


def merge_tree_html(node: MergeNode, *, leaf: str = "byte", max_nodes: int = 200) -> str:
    """A ``core.engine.details.MergeNode`` tree (token down to its bytes) as nested boxes:
    each box shows the token and ``ID n · merge #m`` (``leaf`` for a node no merge made:
    "byte", or "base piece" for BPE over characters; "special" for a special token), its
    two parts below it. The first ``max_nodes`` nodes, parents before children and left
    before right, are drawn; a line says how many more there are. Its font size makes the
    whole tree as wide as the column, between 9 and 14 px.

    >>> from core.engine.details import MergeNode
    >>> a, b = MergeNode(97, b"a", None, None, None), MergeNode(98, b"<", None, None, None)
    >>> tree = merge_tree_html(MergeNode(300, b"a<", 0, a, b))
    >>> tree.count('class="tp-mt-box'), '<code>a&lt;</code><span class="tp-mt-id">ID 300 ·' in tree
    (3, True)
    """
    drawn = 0

    def draw(cur: MergeNode) -> tuple[str, float]:
        """The node's HTML and its estimated width in em."""
        nonlocal drawn
        drawn += 1
        rank = (f"merge #{merge_number(cur.rank)}" if cur.rank is not None
                else "special" if cur.special else leaf)
        kind = " tp-mt-merge" if cur.rank is not None else ""
        label, line = token_label(cur.token), f"ID {cur.id} · {rank}"
        box = (f'<div class="tp-mt-box{kind}" title="bytes {hex_bytes(cur.token)}">'
               f"<code>{html.escape(label)}</code>"
               f'<span class="tp-mt-id">{html.escape(line)}</span></div>')
        kids = [draw(child) for child in (cur.left, cur.right)  # left first: preorder
                if child is not None and drawn < max_nodes]
        below = f'<div class="tp-mt-kids">{"".join(k for k, _ in kids)}</div>' if kids else ""
        width = max(_columns(label) * _CODE_EM, len(line) * _ID_EM) + _BOX_EM
        return (f'<div class="tp-mt-node">{box}{below}</div>',
                max(width, sum(w for _, w in kids)) + _NODE_EM)

    body, width = draw(node)
    size = f"font-size:clamp({_MIN_PX}px,calc(100cqw / {width:.1f}),{_MAX_PX}px)"
    body = body.replace('<div class="tp-mt-node">', f'<div class="tp-mt-node" style="{size}">', 1)
    left_out = _tree_size(node) - drawn
    more = (f'<div class="tp-mt-more">… and {left_out:,} more node(s), not drawn</div>'
            if left_out > 0 else "")
    return f'<div class="tp-mtree">{body}</div>{more}{_TREE_CSS}'
