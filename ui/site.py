"""The app's pages, in one table: it feeds the sidebar menu, links, tests and benchmarks.

Files in ``pages/`` have plain ASCII names (``2_Tokenize.py``): Streamlit's automatic
navigation serves each at the URL path it derives from the name (number and underscore
dropped: ``/Tokenize``), which is also the page's title here. Icons live only in this table.
No Streamlit import.

>>> page("Tokenize").script, page("Tokenize").url_path, page("Home").url_path
('pages/2_Tokenize.py', 'Tokenize', '')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAGES", "Page", "page"]


@dataclass(frozen=True)
class Page:
    """One page: its title (what ``setup()`` is given, and its URL path), icon and script."""

    title: str
    icon: str
    script: str  # relative to the repository root, as st.page_link and AppTest want it

    @property
    def url_path(self) -> str:
        """The path Streamlit serves it at (``""`` for the home page)."""
        return "" if self.script == "app.py" else self.title


#: In menu order.
PAGES: tuple[Page, ...] = (
    Page("Home", "🏠", "app.py"),
    Page("Train", "🏋️", "pages/1_Train.py"),
    Page("Tokenize", "🔤", "pages/2_Tokenize.py"),
    Page("Decode", "🔢", "pages/3_Decode.py"),
    Page("Vocabulary", "📖", "pages/4_Vocabulary.py"),
    Page("Compare", "⚖️", "pages/5_Compare.py"),
    Page("Replay", "🎞️", "pages/6_Replay.py"),
    Page("Evaluate", "📏", "pages/7_Evaluate.py"),
)

_BY_TITLE = {p.title: p for p in PAGES}


def page(title: str) -> Page:
    """The page called ``title`` (``KeyError`` for an unknown one)."""
    return _BY_TITLE[title]
