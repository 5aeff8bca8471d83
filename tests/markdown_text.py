"""What a reader sees of an alert's Markdown: the text with CommonMark's backslash escapes
read (ui.display.message writes every ASCII punctuation character escaped, so user text stays
literal), for tests that check a message's wording.

>>> shown(r"“big\\.txt” \\(1\\.2 MB\\)  " + "\\n" + "next")
'“big.txt” (1.2 MB)\\nnext'
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # a backslash before ASCII punctuation


def shown(markdown: str) -> str:
    """``markdown`` as read: escapes removed, hard line breaks (two spaces) as newlines."""
    return _ESCAPE.sub(r"\1", markdown.replace("  \n", "\n"))
