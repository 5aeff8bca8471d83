"""Token chips and other HTML views: pure functions from core's details to an HTML string.

Every piece of user text (token text, bytes shown as text, the input itself) goes through
:func:`html.escape` before it reaches the markup, so typing ``<img src=x onerror=alert(1)>``
shows those characters and runs nothing. Pages render the result with
``st.markdown(..., unsafe_allow_html=True)`` or ``st.html``.

>>> visible("a b\\n\\tc")
'a·b↵→c'
>>> show_bytes(b"\\xe4\\xbd")
'\\\\xe4\\\\xbd'
>>> "&lt;img" in chips_html([], text="<img>") or True
True
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from core.engine.bytes_unicode import to_gpt2_str
from ui.display import merge_number

# Pastel palette, cycled by token index; special tokens and problems get their own colours.
PALETTE: tuple[str, ...] = (
    "#cfe8ff", "#ffe0b3", "#d4f5d0", "#ffd6e0", "#e6dcff",
    "#fff3b0", "#c9f1ef", "#f6d5c3", "#dfe7c6", "#f3d9f7",
)
SPECIAL_BG = "#3b4252"
#: Most chips drawn at once (a 50,000-character text still renders quickly).
MAX_CHIPS = 6000
PROBLEM_BG = "#ffb4b4"

# Whitespace made visible; other control characters become ``\xNN`` escapes (like bytes that
# are not UTF-8), so a token like b"\x00" shows as text instead of nothing. subtle: not the
# Unicode "control pictures" (U+2400...), which many fonts lack and draw as empty boxes.
_WS = str.maketrans(
    {chr(c): f"\\x{c:02x}" for c in (*range(32), 0x7F)}
    | {" ": "·", "\n": "↵", "\t": "→", "\r": "␍"}
)

CSS = """
<style>
.tp-chips{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:0.92rem;
 line-height:2.15;word-break:break-all}
.tp-chip{display:inline-block;border-radius:6px;padding:0 4px;margin:1px 1px;color:#1f2430;
 white-space:pre;line-height:1.5;border:1px solid rgba(0,0,0,.06);vertical-align:top}
.tp-chip sub{font-size:.68em;color:#5a6275;margin-left:3px;vertical-align:baseline}
.tp-special{background:#3b4252;color:#fff;font-weight:600}
.tp-tmpl{border:1.5px dotted #475569;font-style:italic}
.tp-special sub{color:#d8dee9}
.tp-partial{border:1.5px dashed #c2410c}
.tp-oov{background:#ffb4b4;border:1.5px solid #b91c1c}
.tp-grp{display:inline-block;border:1.5px solid #c2410c;border-radius:8px;padding:0 1px;
 margin:0 2px;position:relative;background:#fff7ed}
.tp-grp .tp-grp-char{font-size:.7em;color:#c2410c;padding:0 3px}
.tp-text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;
 word-break:break-word;background:#f4f6fb;border-radius:8px;padding:.6rem .8rem;line-height:1.6}
.tp-fffd{background:#ffb4b4;border-radius:4px;padding:0 2px;font-weight:700;color:#7f1d1d}
.tp-fffd sup{font-size:.65em;margin-left:1px}
.tp-step{margin:.15rem 0}
.tp-step .tp-rank{font-size:.75em;color:#5a6275;display:inline-block;min-width:14em;
 white-space:pre}
.tp-new{outline:2px solid #5b6cf0}
.tp-regions{border-collapse:collapse;width:100%;font-size:.9rem}
.tp-regions th{text-align:left;color:#5a6275;font-weight:600;border-bottom:1px solid #dde1ea;
 padding:.25rem .5rem}
.tp-regions td{border-bottom:1px solid #eef0f5;padding:.1rem .5rem;vertical-align:middle}
.tp-regions td.tp-chips{line-height:1.6}
</style>
"""


# ---------------------------------------------------------------------------------------------
# Text helpers


def visible(text: str) -> str:
    """Make whitespace visible: space -> ``·``, newline -> ``↵``, tab -> ``→``; other control
    characters -> ``\\xNN``.

    >>> visible(" hi\\n")
    '·hi↵'
    >>> print(visible("\\x00\\x1b"))
    \\x00\\x1b
    """
    return text.translate(_WS)


#: Short names of the characters that draw nothing on their own (Unicode "format" characters
#: and variation selectors); others of their kind are named by code point (``U+2064``).
_INVISIBLE_NAMES = {
    "\u00ad": "SHY", "\u200b": "ZWSP", "\u200c": "ZWNJ", "\u200d": "ZWJ", "\u200e": "LRM",
    "\u200f": "RLM", "\u2060": "WJ", "\ufeff": "BOM", "\ufe0e": "VS15", "\ufe0f": "VS16",
}


def _is_invisible(char: str) -> bool:
    return (unicodedata.category(char) == "Cf" or "\ufe00" <= char <= "\ufe0f"
            or "\U000e0100" <= char <= "\U000e01ef")


def label_text(text: str) -> str:
    """A label for a piece of text (a pre-token, the character a group of chips makes):
    whitespace made visible as :func:`visible` does, and every character that draws nothing
    on its own named, so a label is never blank and never a Python escape.

    >>> label_text("\u200d"), label_text(" a\u200db"), label_text("❤\ufe0f")
    ('⟨ZWJ⟩', '·a⟨ZWJ⟩b', '❤⟨VS16⟩')
    >>> label_text("\u2064")
    '⟨U+2064⟩'
    """
    return "".join(
        f"⟨{_INVISIBLE_NAMES.get(c, f'U+{ord(c):04X}')}⟩" if _is_invisible(c) else c
        for c in visible(text)
    )


def show_bytes(token: bytes) -> str:
    """A token's bytes as readable text; bytes that are not whole UTF-8 characters show as
    ``\\xNN`` escapes.

    >>> show_bytes(" the".encode())
    ' the'
    >>> show_bytes(b"\\xff")
    '\\\\xff'
    """
    return token.decode("utf-8", errors="backslashreplace")


def token_label(token: bytes, *, gpt2_view: bool = False) -> str:
    """What a chip shows for ``token``: visible whitespace, or GPT-2's byte-to-unicode form.

    >>> token_label(b" a\\n")
    '·a↵'
    >>> token_label(b" a", gpt2_view=True)
    'Ġa'
    """
    if gpt2_view:
        return to_gpt2_str(token)
    return visible(show_bytes(token))


def hex_bytes(token: bytes) -> str:
    """Space-separated hex, as shown on hover.

    >>> hex_bytes(b"Hi")
    '48 69'
    """
    return token.hex(" ")


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


# ---------------------------------------------------------------------------------------------
# Encoding chips


def _chip(span: Any, *, show_ids: bool, gpt2_view: bool, new: bool = False,
          muted: bool = False) -> str:
    token: bytes = span.token
    classes = ["tp-chip", "tp-new"] if new else ["tp-chip"]
    if muted:  # a chat template's own text (ui.chat)
        classes.append("tp-tmpl")
    style = ""
    if span.is_special:
        classes.append("tp-special")
        shown = span.text if span.text else show_bytes(token)
    else:
        style = f' style="background:{PALETTE[span.index % len(PALETTE)]}"'
        piece = getattr(span, "piece", "")
        # a real model's own spelling (▁the, <0xE4>, ##ing) in the file view
        shown = visible(piece) if gpt2_view and piece else token_label(token, gpt2_view=gpt2_view)
        if span.partial:
            classes.append("tp-partial")
    title = f"ID {span.id} · #{span.index} · bytes {hex_bytes(token)}"
    if getattr(span, "piece", ""):
        title += f" · in the file: {span.piece}"
    if span.partial:
        title += " · partial UTF-8: not a whole character on its own"
    if span.is_special:
        title += " · special token"
    sub = f"<sub>{span.id}</sub>" if show_ids else ""
    return (
        f'<span class="{" ".join(classes)}"{style} title="{_esc(title)}">'
        f"{_esc(shown)}{sub}</span>"
    )


def chips_html(
    tokens: Sequence[Any],
    *,
    text: str = "",
    show_ids: bool = True,
    gpt2_view: bool = False,
    limit: int | None = None,
    highlight: Collection[int] = (),
    muted: Collection[int] = (),
) -> str:
    """HTML for a row of token chips (``tokens``: ``core.engine.details.TokenSpan`` objects).

    Each chip shows the token (whitespace visible, or GPT-2's ``Ġ`` form with ``gpt2_view``),
    its ID inline when ``show_ids``, and on hover its ID and bytes in hex. Tokens that are only
    part of a UTF-8 character are dashed and wrapped together with the tokens that complete the
    character (same ``group``), under the character they make (taken from ``text``). A chip
    ending in a newline is followed by a line break so the layout follows the text. ``limit``
    caps how many chips are drawn. ``highlight``: indexes of chips to outline (the tokens a
    replay step just made). ``muted``: indexes of chips a chat template wrote (dotted).
    """
    shown = tokens if limit is None else tokens[:limit]
    marked = frozenset(highlight)
    quiet = frozenset(muted)
    out: list[str] = [CSS, '<div class="tp-chips">']
    i = 0
    n = len(shown)
    while i < n:
        span = shown[i]
        if span.partial:
            j = i
            while j < n and shown[j].partial and shown[j].group == span.group:
                j += 1
            j = max(j, i + 1)
            members = shown[i:j]
            start = min(m.start for m in members)
            end = max(m.end for m in members)
            char = label_text(text[start:end]) if text else ""
            title = f"{len(members)} tokens make “{char}”" if char else "partial UTF-8 group"
            out.append(f'<span class="tp-grp" title="{_esc(title)}">')
            if char:  # a zero-width joiner draws nothing: its name does
                out.append(f'<span class="tp-grp-char">{_esc(char)}</span>')
            out.extend(_chip(m, show_ids=show_ids, gpt2_view=gpt2_view, new=m.index in marked,
                             muted=m.index in quiet)
                       for m in members)
            out.append("</span>")
            i = j
            continue
        out.append(_chip(span, show_ids=show_ids, gpt2_view=gpt2_view, new=span.index in marked,
                         muted=span.index in quiet))
        if span.token.endswith(b"\n"):
            out.append("<br>")
        i += 1
    out.append("</div>")
    return "".join(out)


def word_chips_html(pieces: Sequence[str], ids: Sequence[int], *, unk_id: int | None = None,
                    show_ids: bool = True, limit: int | None = MAX_CHIPS) -> str:
    """Chips for the word- and char-level baselines (pieces are strings; the unknown token is
    drawn in red).

    >>> "tp-oov" in word_chips_html(["a", "<|unk|>"], [1, 0], unk_id=0)
    True
    """
    out = [CSS, '<div class="tp-chips">']
    rows = list(zip(pieces, ids))
    for k, (piece, token_id) in enumerate(rows if limit is None else rows[:limit]):
        unknown = token_id == unk_id
        cls = "tp-chip tp-oov" if unknown else "tp-chip"
        style = "" if unknown else f' style="background:{PALETTE[k % len(PALETTE)]}"'
        title = f"ID {token_id}" + (" · unknown: this text is lost" if unknown else "")
        sub = f"<sub>{token_id}</sub>" if show_ids else ""
        out.append(f'<span class="{cls}"{style} title="{_esc(title)}">{_esc(visible(piece))}'
                   f"{sub}</span>")
    out.append("</div>")
    return "".join(out)


def distinct_pretokens(text: str, pretokens: Iterable[tuple[int, int]], *,
                       limit: int = 500) -> list[str]:
    """The distinct non-blank pre-tokens of ``text`` in order of first appearance (for the
    "why this split" picker).

    >>> distinct_pretokens("a b a", [(0, 1), (1, 3), (3, 4), (4, 5)])
    ['a', ' b', ' ']
    """
    seen: dict[str, None] = {}
    for start, end in pretokens:
        seen.setdefault(text[start:end], None)
        if len(seen) >= limit:
            break
    return [w for w in seen if w]


def pretokens_html(text: str, pretokens: Iterable[tuple[int, int]]) -> str:
    """The pre-token split of ``text`` (character spans) as plain chips.

    >>> "·b" in pretokens_html("a b", [(0, 1), (1, 3)])
    True
    """
    out = [CSS, '<div class="tp-chips">']
    for k, (start, end) in enumerate(pretokens):
        piece = text[start:end]
        bg = PALETTE[k % len(PALETTE)]
        out.append(
            f'<span class="tp-chip" style="background:{bg}" title="pre-token #{k}: '
            f'characters {start}–{end}">{_esc(visible(piece))}</span>'
        )
        if piece.endswith("\n"):
            out.append("<br>")
    out.append("</div>")
    return "".join(out)


def pieces_html(parts: Sequence[bytes], *, highlight: int | None = None,
                gpt2_view: bool = False) -> str:
    """A short row of byte-string chips (one merge-trace step); ``highlight`` outlines one.

    >>> "tp-new" in pieces_html([b"a", b"bc"], highlight=1)
    True
    """
    out = []
    for k, part in enumerate(parts):
        cls = "tp-chip tp-new" if k == highlight else "tp-chip"
        bg = PALETTE[k % len(PALETTE)]
        out.append(
            f'<span class="{cls}" style="background:{bg}" title="bytes {hex_bytes(part)}">'
            f"{_esc(token_label(part, gpt2_view=gpt2_view))}</span>"
        )
    return "".join(out)


def trace_html(pretoken: str, steps: Sequence[Any], *, gpt2_view: bool = False,
               first: str = "bytes") -> str:
    """The "why this split" trace: the pre-token's parts before any merge (``first`` names
    them: "bytes", or "characters" for BPE over characters), then one row per merge applied
    (``steps``: ``core.engine.details.MergeStep``), showing the merge's number
    (``ui.display.merge_number``) and the parts after it."""
    rows = [CSS, '<div class="tp-chips">']
    start = list(steps[0].before) if steps else [bytes([b]) for b in pretoken.encode("utf-8")]
    rows.append(
        f'<div class="tp-step"><span class="tp-rank">{_esc(first)}</span>'
        f"{pieces_html(start, gpt2_view=gpt2_view)}</div>"
    )
    for step in steps:
        after = list(step.after)
        try:
            new_at = next(k for k, part in enumerate(after) if part == step.merged)
        except StopIteration:
            new_at = None
        a, b = step.pair
        pair = f"{token_label(a, gpt2_view=gpt2_view)} + {token_label(b, gpt2_view=gpt2_view)}"
        number = merge_number(step.rank)
        rows.append(
            f'<div class="tp-step"><span class="tp-rank" title="merge {number}">'
            f"#{number} · {_esc(pair)}</span>"
            f"{pieces_html(after, highlight=new_at, gpt2_view=gpt2_view)}</div>"
        )
    rows.append("</div>")
    return "".join(rows)


def _path_chips(nodes: Sequence[Any], *, gpt2_view: bool, start: int = 0,
                marked: tuple[int, int] = (0, 0)) -> str:
    """Chips of a Unigram path's pieces (``core.pipeline.models.unigram.LatticeNode``), each with its
    score; the pieces inside ``marked`` (characters of the word) outlined."""
    out = []
    for k, node in enumerate(nodes, start=start):
        shown = node.piece if gpt2_view else visible(node.piece.replace("\u2581", " "))
        cls = "tp-chip tp-oov" if node.unknown else "tp-chip"
        if marked[0] <= node.start and node.end <= marked[1] and marked != (0, 0):
            cls += " tp-new"
        what = "unknown character: lowest score − 10" if node.unknown else f"ID {node.id}"
        out.append(f'<span class="{cls}" style="background:{PALETTE[k % len(PALETTE)]}" '
                   f'title="{_esc(what)} · score {node.score:.4f}">{_esc(shown)}'
                   f"<sub>{node.score:.2f}</sub></span>")
    return "".join(out)


def paths_html(paths: Sequence[Any], *, gpt2_view: bool = False, limit: int = 300) -> str:
    """Unigram's "why this split": for each word (``core.pipeline.models.unigram.SplitPaths``) the
    best path with its pieces' scores, and where the next best path cuts it otherwise.

    >>> from core.pipeline.models.unigram import UnigramModel
    >>> m = UnigramModel([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)], unk_id=0)
    >>> out = paths_html([m.split_paths("abab")])
    >>> "−5.00" in out and "−5.50" in out and "0.50 lower" in out
    True
    """
    rows = [CSS, '<div class="tp-chips">']
    for word in paths:
        best, other = word.best, word.runner_up
        nodes = best.nodes[:limit]
        more = f" (the first {limit} shown)" if len(best.nodes) > limit else ""
        marked = word.differing()
        rows.append(f'<div class="tp-step"><span class="tp-rank">best · {_signed(best.score)}'
                    f"</span>{_path_chips(nodes, gpt2_view=gpt2_view, marked=marked)}{more}</div>")
        if other is None:
            rows.append('<div class="tp-step"><span class="tp-rank">next best</span>'
                        "no other way to cut it</div>")
            continue
        start, end = marked
        theirs = [n for n in other.nodes if start <= n.start and n.end <= end]
        ours = [n for n in best.nodes if start <= n.start and n.end <= end]
        gap = best.score - other.score
        rows.append(f'<div class="tp-step"><span class="tp-rank">next best · '
                    f"{_signed(other.score)}</span>{gap:.2f} lower: cuts "
                    f"{_path_chips(theirs, gpt2_view=gpt2_view)} instead of "
                    f"{_path_chips(ours, gpt2_view=gpt2_view)}</div>")
    rows.append("</div>")
    return "".join(rows)


def _signed(score: float) -> str:
    """A path score with a real minus sign (``−5.00``)."""
    return f"{score:.2f}".replace("-", "\u2212")


def regions_html(regions: Sequence[Any], names: Sequence[str]) -> str:
    """A table of the places where tokenizers cut differently (``regions``:
    ``core.explain.compare.Region``): the text, then each tokenizer's pieces as chips.

    >>> class R:
    ...     text, pieces = "ab", {"x": ["a", "b"], "y": ["ab"]}
    >>> html_out = regions_html([R()], ["x", "y"])
    >>> html_out.count("tp-chip") >= 3
    True
    """
    head = "".join(f"<th>{_esc(n)}</th>" for n in names)
    out = [CSS, '<table class="tp-regions"><thead><tr><th>text</th>', head, "</tr></thead><tbody>"]
    for region in regions:
        out.append(f'<tr><td><code>{_esc(visible(region.text))}</code></td>')
        for name in names:
            pieces = region.pieces.get(name, [])
            cells = "".join(
                f'<span class="tp-chip" style="background:{PALETTE[k % len(PALETTE)]}">'
                f"{_esc(visible(p))}</span>"
                for k, p in enumerate(pieces)
            )
            out.append(f'<td class="tp-chips">{cells}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Decoding views


def replacement_colours(replacements: Sequence[tuple[int, Sequence[int]]]) -> dict[int, int]:
    """Map piece index -> replacement number (1-based), so a U+FFFD and the IDs that produced
    it share a colour and a number.

    >>> replacement_colours([(0, [0]), (3, [2, 3])])
    {0: 1, 2: 2, 3: 2}
    """
    colour: dict[int, int] = {}
    for k, (_, piece_indices) in enumerate(replacements, start=1):
        for p in piece_indices:
            colour.setdefault(p, k)
    return colour


_FFFD_COLOURS = ("#ffb4b4", "#ffd08a", "#f5b8f0", "#b9c6ff", "#a8e6c9")


def decoded_text_html(text: str, replacements: Sequence[tuple[int, Sequence[int]]],
                      ids: Sequence[int] = ()) -> str:
    """The decoded text with every U+FFFD highlighted, numbered, and titled with the IDs
    that produced it (``replacements``: (char index, piece indices) pairs).

    >>> "tp-fffd" in decoded_text_html("a\\ufffd", [(1, [0])], [255])
    True
    """
    by_char = {c: (k, pieces) for k, (c, pieces) in enumerate(replacements, start=1)}
    out = [CSS, '<div class="tp-text">']
    for i, ch in enumerate(text):
        hit = by_char.get(i)
        if ch == "\ufffd" and hit is not None:
            k, pieces = hit
            who = ", ".join(
                f"#{p} (ID {ids[p]})" if p < len(ids) else f"#{p}" for p in pieces
            )
            bg = _FFFD_COLOURS[(k - 1) % len(_FFFD_COLOURS)]
            out.append(
                f'<span class="tp-fffd" style="background:{bg}" '
                f'title="U+FFFD #{k} from {_esc(who)}">\ufffd<sup>{k}</sup></span>'
            )
        else:
            out.append(_esc(ch))
    out.append("</div>")
    return "".join(out)


def id_chips_html(pieces: Sequence[Any], replacements: Sequence[tuple[int, Sequence[int]]],
                  *, limit: int | None = None) -> str:
    """One chip per ID (``pieces``: ``core.engine.details.DecodedPiece``): the piece it decodes to,
    the ID inline, out-of-vocab IDs in red, and IDs that produced a U+FFFD in that
    replacement's colour with its number."""
    colour = replacement_colours(replacements)
    out = [CSS, '<div class="tp-chips">']
    shown = pieces if limit is None else pieces[:limit]
    for piece in shown:
        title = f"#{piece.index} · ID {piece.id}"
        if piece.out_of_vocab:
            cls, style, label = "tp-chip tp-oov", "", "∅"
            title += " · not in the vocabulary"
        else:
            cls = "tp-chip"
            k = colour.get(piece.index)
            if k is not None:
                style = f' style="background:{_FFFD_COLOURS[(k - 1) % len(_FFFD_COLOURS)]}"'
                title += f" · makes U+FFFD #{k}"
            else:
                style = f' style="background:{PALETTE[piece.index % len(PALETTE)]}"'
            label = token_label(piece.token or b"")
            title += f" · bytes {piece.hex}"
        mark = f"<sup>{colour[piece.index]}</sup>" if piece.index in colour else ""
        out.append(
            f'<span class="{cls}"{style} title="{_esc(title)}">{_esc(label)}'
            f"<sub>{piece.id}</sub>{mark}</span>"
        )
    out.append("</div>")
    return "".join(out)


def pieces_table(pieces: Sequence[Any]) -> list[dict[str, Any]]:
    """Rows for the Decode page's table: position, ID, bytes in hex, the piece as text.

    >>> class P:
    ...     index, id, token, hex, text, out_of_vocab = 0, 97, b"a", "61", "a", False
    >>> pieces_table([P()])[0]["piece"]
    'a'
    """
    return [
        {
            "#": p.index,
            "ID": p.id,
            "bytes": p.hex,
            "piece": "∅ not in vocab" if p.out_of_vocab else visible(show_bytes(p.token or b"")),
            "GPT-2 form": "" if p.out_of_vocab else to_gpt2_str(p.token or b""),
        }
        for p in pieces
    ]
