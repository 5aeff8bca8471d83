"""Live typing (ui.live_input) with AppTest: a run that arrives late never takes text back.

While the user types, the browser asks for runs before it has the address bar of the
previous run, so a run can carry an address the session wrote one run earlier. The real
browser rarely shows it on an idle machine (tests/browser/test_live_typing.py types
against it); here the late address is given directly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui import keys
from ui.site import page

pytestmark = pytest.mark.xdist_group("apptest")  # share one process's Streamlit caches

HOME = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(autouse=True)
def library_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "library"
    monkeypatch.setenv("TOKPLAY_LIBRARY_DIR", str(path))
    return path


@pytest.mark.parametrize(("name", "key", "first", "second", "third"), [
    ("Tokenize", keys.TOK_TEXT, "live", "live ty", "live typing"),
    ("Compare", keys.CMP_TEXT, "live", "live ty", "live typing"),
    ("Decode", keys.DEC_IDS, "15496", "15496, 11", "15496, 11, 995"),
])
def test_a_late_run_with_the_previous_address_keeps_the_newer_text(
        name: str, key: str, first: str, second: str, third: str) -> None:
    at = AppTest.from_file(HOME, default_timeout=120)
    at.switch_page(page(name).script)
    at.run()
    box = at.text_area(key="_w." + key)
    box.input(first).run()
    late = dict(at.query_params)  # the address after the first commit
    at.text_area(key="_w." + key).input(second).run()
    # the third commit left the browser before the second run's address reached it
    at.query_params.clear()
    at.query_params.update(late)
    at.text_area(key="_w." + key).input(third).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[key] == third
    assert at.text_area(key="_w." + key).value == third
