"""The copy line (``ui.copy_line``): the text reaches the page escaped, the script is fixed."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from ui import copy_line

HOSTILE = '</code><script>alert("x")</script><img src=x onerror=alert(1)> & \'q\''


def test_hostile_text_is_escaped_and_the_one_script_is_the_buttons() -> None:
    body = copy_line.html_line(HOSTILE)
    assert body.count("<script>") == 1 and "alert" not in body.split("<script>")[1]
    assert "<img" not in body and html.escape(HOSTILE) in body
    # the script reads the text from the page, never from its own source
    assert HOSTILE not in copy_line.html_line(HOSTILE).split("<script>")[1]


@given(st.text())
def test_the_line_shows_exactly_the_text(text: str) -> None:
    body = copy_line.html_line(text)
    (shown,) = re.findall(r'<code class="tp-copy-text">(.*?)</code>', body, re.S)
    assert html.unescape(shown) == text


def test_wrapping_is_a_class_and_the_button_is_named() -> None:
    assert 'class="tp-copy tp-wrap"' in copy_line.html_line("1, 2", wrap=True)
    assert 'class="tp-copy"' in copy_line.html_line("1, 2")
    assert f'aria-label="{copy_line.COPY_LABEL}"' in copy_line.html_line("x")
