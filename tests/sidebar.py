"""Reading the sidebar's "Active tokenizer" block (``ui.widgets.active_html``: one
``st.html``) from an AppTest run, as a reader of the page sees it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any


def active_tokenizer(at: Any) -> tuple[str, str] | None:
    """The label and the note the sidebar shows under "Active tokenizer", or None."""
    for element in at.sidebar.get("html"):
        body = element.proto.body
        if body.startswith('<div class="tp-active">'):
            root = ET.fromstring(f"<root>{body}</root>")  # well-formed: the texts are escaped
            parts = {e.get("class"): e for e in root.iter("div")}
            code = root.find(".//code")
            assert code is not None
            return code.text or "", parts["tp-active-note"].text or ""
    return None
