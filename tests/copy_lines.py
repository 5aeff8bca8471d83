"""What an AppTest page shows on its copy lines (``ui.copy_line``: a link, token IDs)."""

from __future__ import annotations

import html
import re
from typing import Any

_LINE = re.compile(r'<div class="(tp-copy[^"]*)"><code class="tp-copy-text">(.*?)</code>', re.S)


def copy_lines(where: Any) -> list[tuple[str, bool]]:
    """``(text, wraps)`` of every copy line in ``where`` (an ``AppTest`` or one of its blocks,
    e.g. ``at.main``), in page order."""
    found = []
    for element in where.get("html"):
        found += [(html.unescape(m[2]), "tp-wrap" in m[1].split()) for m in _LINE.finditer(element.proto.body)]
    return found


def copied(where: Any) -> list[str]:
    """The texts of the copy lines in ``where``: what one click on each button copies."""
    return [text for text, _ in copy_lines(where)]
