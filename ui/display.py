"""How the pages show user text and merge numbers, in one place (no Streamlit import).

Streamlit renders tables (``st.table``), captions, messages and widget labels as GitHub-flavoured
Markdown with extras of its own: emoji shortcodes (``:smile:``), colour directives
(``:red[...]``), icons (``:material/home:``) and ``$math$``. A token ``##`` would be an empty
heading there and ``*`` a bullet. Every token, tokenizer label and file name reaches Markdown
through :func:`code_span` (code font, as a token) or :func:`escaped` (running text), which
show exactly the text given. Merges are numbered from 1 on every page (:func:`merge_number`).

>>> code_span("**"), escaped("**")
('`**`', '\\\\*\\\\*')
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

from ui.limits import readable_token

__all__ = ["MERGE_NUMBERING", "code_span", "escaped", "merge_number", "merge_table", "message",
           "spelling_name"]

#: How every page numbers merges, said once where a number is shown (a caption, a help).
MERGE_NUMBERING = "merge 1 is the first merge learned"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BACKTICKS = re.compile(r"`+")
#: subtle: Streamlit's frontend rewrites this to ``:material_`` in the raw Markdown before it
#: parses anything, so even a code span shows it changed; only an escaped colon stops it.
_ICON = ":material/"
_PUNCTUATION = frozenset(string.punctuation)  # ASCII punctuation: CommonMark escapes any of it
#: What Streamlit's Markdown changes even with every punctuation character escaped: GitHub's
#: autolinks (web and mail addresses) and Streamlit's logo shortcode (checked in chromium).
_UNESCAPABLE = re.compile(r"https?://|www\.|mailto:|xmpp:|@[-\w]+\.[-\w]|:streamlit:",
                          re.IGNORECASE)


def code_span(text: str) -> str:
    r"""Markdown that shows ``text`` literally in code font: a CommonMark code span.

    Nothing inside a code span is Markdown, nor an emoji, directive or math. The fence is
    one backtick longer than the longest run of backticks inside, and a space pads both
    ends when the text starts or ends with a backtick (the fence would take it) or with a
    space at both ends (the renderer strips one space from each end). Line breaks show as
    ``↵``, as everywhere in the playground (in a code span two of them would end it).

    >>> code_span("##"), code_span("a`b"), code_span("x``y")
    ('`##`', '``a`b``', '```x``y```')
    >>> code_span("`"), code_span("``x"), code_span("x`")
    ('`` ` ``', '``` ``x ```', '`` x` ``')
    >>> code_span(" a "), code_span(" a"), code_span("  "), code_span("")
    ('`  a  `', '` a`', '`  `', '')
    >>> code_span("a\nb")
    '`a↵b`'

    ``:material/`` is cut at its colon, which shows between two spans, escaped:

    >>> code_span("a:material/b")
    '`a`\\:`material/b`'
    """
    if _ICON in text:
        first, *rest = text.split(_ICON)
        return "\\:".join([code_span(first), *(code_span("material/" + p) for p in rest)])
    text = _LINE_BREAK.sub("↵", text)
    if not text:
        return ""
    fence = "`" * (max(map(len, _BACKTICKS.findall(text)), default=0) + 1)
    both_spaces = text[0] == text[-1] == " " and text.strip(" ")
    pad = " " if "`" in (text[0], text[-1]) or both_spaces else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def escaped(text: str) -> str:
    r"""Markdown that shows ``text`` literally in running text (a label or a file name in a
    sentence, in the sentence's own font): every ASCII punctuation character backslash-escaped,
    which CommonMark allows for all of them. An escaped ``:``, ``$`` or ``[`` starts no emoji,
    icon, directive or math in Streamlit either (checked in chromium). Line breaks show as
    ``↵``; runs of spaces collapse, as in any HTML text.

    >>> print(escaped("**bold** :smile: $x$ <b>"))
    \*\*bold\*\* \:smile\: \$x\$ \<b\>
    >>> print(escaped("vocab.pkl + merges.pkl"))
    vocab\.pkl \+ merges\.pkl

    subtle: GitHub's autolinks and Streamlit's ``:streamlit:`` logo are found in the text
    *after* the escapes are read, so no escape stops them; a text with a web or mail address
    or that shortcode goes in a code span (:func:`code_span`) instead.

    >>> escaped("from https://x.org"), escaped("a :streamlit: b")
    ('`from https://x.org`', '`a :streamlit: b`')
    """
    if _UNESCAPABLE.search(text):
        return code_span(text)
    return "".join(f"\\{c}" if c in _PUNCTUATION else c for c in _LINE_BREAK.sub("↵", text))


def message(text: str) -> str:
    r"""Markdown that shows a message literally, its line breaks kept: :func:`escaped` line by
    line. Messages from core name files, links and tokens the user chose, so an alert shows
    them this way, never as Markdown of their own.

    >>> message("bad file **x**.txt\nfix it")
    'bad file \\*\\*x\\*\\*\\.txt  \nfix it'
    """
    return "  \n".join(escaped(line) for line in _LINE_BREAK.split(text))


def merge_number(rank: int) -> int:
    """The number the pages show for the merge at 0-based ``rank`` (core's index into the
    merge list): merge n is the n-th merge learned. So Replay's step k adds merge k, the
    Train page's "Merges 1,234" ends at merge 1,234, and a training stopped at merge N kept
    merges 1 to N.

    >>> merge_number(0)
    1
    """
    return rank + 1


def spelling_name(byte_level: bool) -> str:
    """What the pages call a token's own spelling (``id_to_piece``): GPT-2's byte form for
    byte-level BPE (``capabilities.byte_level``), else the tokenizer's file (``▁the``,
    ``##ing``).

    >>> spelling_name(True), spelling_name(False)
    ('GPT-2 form', 'in the file')
    """
    return "GPT-2 form" if byte_level else "in the file"


def merge_table(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """The Train page's table of merges (``st.table``, whose every cell is Markdown) from
    training rows (``ui.training_worker.MergeRow``: rank, count, token, pair, ...): the merge
    number, and the token and its parts as code spans of :func:`ui.limits.readable_token`.

    >>> merge_table([(0, 7, b"##", (b"#", b"#"), 257, 0.1)])
    [{'merge': 1, 'token': '`##`', 'left': '`#`', 'right': '`#`', 'count': 7, 'bytes (hex)': '23 23'}]
    """
    return [
        {
            "merge": merge_number(rank),
            "token": code_span(readable_token(token)),
            "left": code_span(readable_token(left)),
            "right": code_span(readable_token(right)),
            "count": count,
            "bytes (hex)": token.hex(" "),
        }
        for rank, count, token, (left, right), *_ in rows
    ]
