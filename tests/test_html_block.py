"""ui.html_block: an HTML body reaches the browser exactly as drawn (st.html would dedent and
strip a str body first: two regexes over every character, the cost of a chart's SVG)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

#: Every line indented alike, and spaces around it: what dedent and strip would change.
BODY = '  <pre class="tp-x">  one\n  two</pre>\n  <b>three</b>  '


def _script() -> None:
    from tests.test_html_block import BODY
    from ui import html_block

    html_block.draw(BODY)
    html_block.draw("<script>1</script>", unsafe_allow_javascript=True, width=300)
    html_block.draw("<style>.tp-x{color:red}</style>")  # style only: still drawn, not shown


def test_the_body_arrives_as_drawn_and_the_options_pass_through() -> None:
    at = AppTest.from_function(_script, default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    bodies = [(h.proto.body, h.proto.unsafe_allow_javascript) for h in at.get("html")]
    assert (BODY, False) in bodies  # not "<pre ...>  one\ntwo</pre>\n<b>three</b>"
    assert ("<script>1</script>", True) in bodies
