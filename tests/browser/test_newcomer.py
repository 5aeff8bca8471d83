"""A newcomer's machine: the app started from a copy of the repository with no ``../shared``
beside it, ``TIKTOKEN_CACHE_DIR`` unset and empty ``HOME`` / ``XDG_*`` folders.

Every page opens without an error or exception, and a linked text on Tokenize shows tiktoken's
IDs for all three presets, from the files the package ships.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.launch import stop
from tests.browser.conftest import REPO, AppBrowser, browser_session, start_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

PAGES = ["", "Train", "Tokenize", "Decode", "Vocabulary", "Compare"]
#: tiktoken's IDs for "Hello world" (tiktoken.get_encoding(name).encode("Hello world")).
HELLO_WORLD = {"gpt2": [15496, 995], "cl100k_base": [9906, 1917], "o200k_base": [13225, 2375]}


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, check=True)
    return [name for name in out.stdout.decode().split("\0") if name]


def newcomer_env(root: Path) -> dict[str, str]:
    """The environment of a user's shell: no project variables, empty home and XDG folders."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TOKPLAY_", "TIKTOKEN_", "XDG_")) and k != "PYTHONPATH"}
    for name in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        folder = root / name.lower()
        folder.mkdir()
        env[name] = str(folder)
    return env


@pytest.fixture(scope="module")
def newcomer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app served from a copy of the repository's tracked files, alone in a temp folder."""
    root = tmp_path_factory.mktemp("newcomer")
    clone = root / "clone"
    for name in _tracked_files():
        if (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    assert not (clone.parent / "shared").exists()
    env = newcomer_env(root)
    env["PYTHONPATH"] = str(clone)  # this copy's core/ and ui/, not the developer's checkout
    where = subprocess.run([sys.executable, "-c", "import core, ui; print(core.__file__)"],
                           cwd=clone, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(clone), where.stdout
    proc, url = start_streamlit(clone, env, root / "server.log")
    try:
        yield url
    finally:
        stop(proc)


@pytest.fixture
def newcomer(browser: object, newcomer_server: str, screenshot_dir: Path) -> Iterator[AppBrowser]:
    with browser_session(browser, newcomer_server, screenshot_dir) as helper:
        yield helper


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p or "Home")
def test_every_page_opens_without_an_error(newcomer: AppBrowser, path: str) -> None:
    newcomer.goto(path)
    alerts = newcomer.page.locator('[data-testid="stAlertContentError"]').all_inner_texts()
    warnings = newcomer.page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts()
    newcomer.screenshot(f"newcomer-{path or 'Home'}")
    assert alerts == [] and warnings == [], alerts + warnings
    newcomer.assert_healthy()


@pytest.mark.parametrize("name", list(HELLO_WORLD))
def test_a_linked_text_shows_tiktokens_ids(newcomer: AppBrowser, name: str) -> None:
    newcomer.goto(f"Tokenize?tok={name}&text=Hello%20world")
    chips = newcomer.page.locator(".tp-chips").first.locator(".tp-chip sub")
    assert [int(x) for x in chips.all_inner_texts()] == HELLO_WORLD[name]
    newcomer.assert_healthy()
