"""``make static`` (deploy/static.py): the stlite site in ``dist/`` is complete and honest.

Built once per module into a temporary folder. The npm package ``@stlite/browser`` comes from
``.cache/stlite`` (git-ignored), which the first run fills with npm; later runs are offline.
Without node/npm (and no cached package) the tests skip saying so; under ``CI=true`` they
fail instead, like tests/test_pyodide.py.

What a browser would trip over is checked without one: every JS module and asset that
stlite.js reaches through relative imports and ``new URL(..., import.meta.url)`` exists in the
copy, every relative ``url(...)`` of stlite.css exists, app.zip holds exactly the app's files
byte for byte, index.html mounts app.py with the pinned Pyodide and requirements, and the
bundled code imports nothing the browser does not have.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.xdist_group("static-build")  # one build, one npm install

CACHE = REPO / ".cache" / "stlite"

# Modules the browser provides besides the stdlib and the bundle: stlite's own (streamlit and
# its numpy/pandas) and REQUIREMENTS (checked against static.REQUIREMENTS below).
BUNDLED = {"core", "training", "ui"}
WITH_STLITE = {"streamlit", "numpy", "pandas"}


def _load_static() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_static", REPO / "deploy" / "static.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


static = _load_static()


def _skip_or_fail(message: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + "; CI must run it", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def stlite_build() -> Path:
    try:
        return static.ensure_stlite(CACHE)
    except RuntimeError as err:
        _skip_or_fail(f"stlite's npm package is not available: {err}")
        raise  # unreachable: _skip_or_fail raises


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory, stlite_build: Path) -> Path:
    out = tmp_path_factory.mktemp("static") / "dist"
    static.build(out, repo=REPO, stlite_build=stlite_build)
    return out


@pytest.fixture(scope="module")
def manifest(dist: Path) -> dict:
    return json.loads((dist / "manifest.json").read_text(encoding="utf-8"))


# --- the app's files -------------------------------------------------------------------------


def test_bundle_files_are_the_app_and_nothing_else():
    files = static.bundle_files(REPO)
    assert files == sorted(files)
    expected = {"app.py", "ui/page.py", "core/__init__.py", "core/data/o200k_base.tiktoken.gz",
                ".streamlit/config.toml"}  # fmt: skip
    expected.update(path.relative_to(REPO).as_posix() for path in (REPO / "pages").glob("*.py"))
    assert expected <= set(files), expected - set(files)
    assert any(name.startswith("core/formats/") for name in files)
    assert any(name.startswith("core/pipeline/") for name in files)
    for name in files:
        parts = name.split("/")
        assert parts[0] in {"app.py", "pages", "ui", "training", "core", ".streamlit"}, name
        assert "__pycache__" not in parts and ".venv" not in parts and "tests" not in parts, name
        assert name.endswith(".py") or name.startswith("core/data/") or name == ".streamlit/config.toml", name


def test_app_zip_holds_exactly_the_bundle_byte_for_byte(dist, manifest):
    files = static.bundle_files(REPO)
    with zipfile.ZipFile(dist / "app.zip") as archive:
        assert archive.namelist() == files
        assert archive.testzip() is None
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_DEFLATED, info.filename
            data = archive.read(info)
            assert data == (REPO / info.filename).read_bytes(), info.filename
            entry = manifest["files"][info.filename]
            assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert sorted(manifest["files"]) == files
    assert manifest["app_zip_bytes"] == (dist / "app.zip").stat().st_size


def test_app_zip_is_deterministic(tmp_path):
    names = static.bundle_files(REPO)
    static._write_zip(tmp_path / "a.zip", REPO, names)
    static._write_zip(tmp_path / "b.zip", REPO, names)
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


def test_manifest_pins_and_sizes(dist, manifest):
    assert manifest["stlite"] == static.STLITE_VERSION == "1.9.2"
    assert manifest["pyodide"] == static.PYODIDE_URL
    assert manifest["requirements"] == static.REQUIREMENTS
    on_disk = sum(p.stat().st_size for p in dist.rglob("*") if p.is_file() and p.name != "manifest.json")
    assert manifest["total_bytes"] == on_disk


def test_requirements_are_pyodides_own_packages():
    """The page adds only packages of Pyodide's own set (no PyPI download on first load): no
    chart library either, the charts are SVG strings (ui.charts)."""
    assert static.REQUIREMENTS == ["regex", "jinja2"]


# --- the JavaScript side ---------------------------------------------------------------------

_STRING = r"""(?:"(\.{1,2}/[^"]+)"|'(\.{1,2}/[^']+)')"""
_COMMENTS = r"(?:\s|/\*.*?\*/)*"
_JS_REFERENCES = [
    re.compile(r"\bfrom\s*" + _STRING),  # import/export ... from "./x.js"
    re.compile(r"\bimport\s*" + _STRING),  # import "./x.js"
    re.compile(r"\bimport\s*\(" + _COMMENTS + _STRING, re.DOTALL),  # import("./x.js")
    re.compile(r"\bnew\s+URL\(\s*" + _STRING + r"\s*,\s*(?:(?:\"\"|'')\s*\+\s*)?import\.meta\.url"),
]
_CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)"'\s]*))\s*\)""")


def _js_references(text: str) -> set[str]:
    found: set[str] = set()
    for pattern in _JS_REFERENCES:
        for match in pattern.finditer(text):
            found.add(next(group for group in match.groups() if group))
    return found


def walk_stlite(root: Path, entry: str = "stlite.js") -> tuple[set[str], list[str]]:
    """Every file reachable from ``entry`` (POSIX paths relative to ``root``) and the
    references that point at no file, as ``"from -> to"``."""
    reached: set[str] = set()
    missing: list[str] = []
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        if not name.endswith((".js", ".mjs")):
            continue
        text = (root / name).read_text(encoding="utf-8")
        for spec in sorted(_js_references(text)):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(name), spec.split("?")[0]))
            if target.startswith("../") or not (root / target).is_file():
                missing.append(f"{name} -> {spec}")
            else:
                todo.append(target)
    return reached, missing


def _css_relative_urls(text: str) -> set[str]:
    urls = {next((g for g in m.groups() if g is not None), "") for m in _CSS_URL.finditer(text)}
    return {
        url for url in urls
        if url and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url)  # data:, https:, ...
        and not url.startswith(("/", "#", "%23"))  # absolute, or a fragment (SVG filters)
    }  # fmt: skip


def test_walker_follows_every_kind_of_reference(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "entry.js").write_text(
        'import { a } from "./a.js";\nimport "./b.js";\nconst c = import(/* x */ "./sub/c.js");\n'
        'const w = new URL("./w.whl", import.meta.url), v = new URL(\'./v.wasm\', "" + import.meta.url);\n'
    )  # fmt: skip
    for name in ("a.js", "b.js", "w.whl"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub" / "c.js").write_text('export * from "../a.js"; import("./gone.js");')
    reached, missing = walk_stlite(tmp_path, "entry.js")
    assert reached == {"entry.js", "a.js", "b.js", "sub/c.js", "w.whl"}
    assert sorted(missing) == ["entry.js -> ./v.wasm", "sub/c.js -> ./gone.js"]


def test_every_module_and_asset_stlite_reaches_is_in_dist(dist):
    root = dist / "stlite"
    reached, missing = walk_stlite(root)
    assert not missing, missing
    # the walker really walked: the chunks, the wasm asset and both wheels stlite.js names
    assert {"wheels/stlite_lib-0.1.0-py3-none-any.whl",
            "wheels/streamlit-1.62.0-cp313-none-any.whl"} <= reached  # fmt: skip
    assert any(name.startswith("assets/") and name.endswith(".wasm") for name in reached)
    assert sum(name.endswith(".js") for name in reached) > 50
    left_in = sorted(str(p.relative_to(dist)) for p in dist.rglob("*") if p.name.endswith((".map", ".d.ts")))
    assert not left_in, f"source maps / type declarations copied: {left_in}"


def test_every_relative_url_of_stlite_css_is_in_dist(dist):
    root = dist / "stlite"
    urls = _css_relative_urls((root / "stlite.css").read_text(encoding="utf-8"))
    assert urls, "stlite.css names its fonts by relative url(...)"
    missing = sorted(u for u in urls if not (root / posixpath.normpath(u.split("?")[0].split("#")[0])).is_file())
    assert not missing, missing


# --- the page --------------------------------------------------------------------------------

_VOID = {"meta", "link", "br", "img", "input", "hr", "source", "wbr", "area", "base", "col"}


class _Structure(HTMLParser):
    """Open/close balance of the elements (enough to catch a broken template)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.seen: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.seen.append((tag, dict(attrs)))
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(f"unexpected </{tag}>")


def _mount_options(html: str) -> dict:
    lines = [line for line in html.splitlines() if line.startswith("const options = ")]
    assert len(lines) == 1, lines
    return json.loads(lines[0].removeprefix("const options = ").removesuffix(";"))


def test_index_html_mounts_the_app_with_the_pins(dist):
    html = (dist / "index.html").read_text(encoding="utf-8")
    assert html.lower().startswith("<!doctype html>")
    for needle in ("./stlite/stlite.js", static.PYODIDE_URL, "app.zip", "cdn.jsdelivr.net",
                   "Pyodide 0.29.3", "<title>Tokenizer Playground</title>", "<noscript>",
                   '<link rel="stylesheet" href="./stlite/stlite.css">'):  # fmt: skip
        assert needle in html, needle
    for requirement in static.REQUIREMENTS:
        assert requirement in html, requirement

    parser = _Structure()
    parser.feed(html)
    parser.close()
    assert not parser.errors and not parser.stack, (parser.errors, parser.stack)
    tags = dict(parser.seen)
    assert tags["html"] == {"lang": "en"}
    assert {"charset": "utf-8"} in [a for t, a in parser.seen if t == "meta"]
    assert any(a.get("name") == "viewport" for t, a in parser.seen if t == "meta")
    assert ("div", {"id": "root"}) in parser.seen
    assert ("script", {"type": "module"}) in parser.seen

    options = _mount_options(html)
    assert options == {
        "entrypoint": "app.py",
        "archives": [{"url": "./app.zip", "format": "zip"}],
        "requirements": static.REQUIREMENTS,
        "pyodideUrl": static.PYODIDE_URL,
        "env": {},
    }
    with zipfile.ZipFile(dist / options["archives"][0]["url"]) as archive:
        assert options["entrypoint"] in archive.namelist()
    assert (dist / "stlite" / "stlite.js").is_file() and (dist / "stlite" / "stlite.css").is_file()


def test_nojekyll_for_github_pages(dist):
    assert (dist / ".nojekyll").is_file()
    assert any(p.name.startswith("_") for p in (dist / "stlite").iterdir())  # why it is needed


def test_build_refuses_to_delete_the_repository_or_a_parent(tmp_path, stlite_build):
    repo = tmp_path / "parent" / "repo"
    repo.mkdir(parents=True)
    (repo / "keep.txt").write_text("precious")
    for out in (repo, repo.parent, repo / ".." / "repo"):
        with pytest.raises(ValueError, match="refusing"):
            static.build(out, repo=repo, stlite_build=stlite_build)
    assert (repo / "keep.txt").read_text() == "precious"


# --- what the bundled code imports -------------------------------------------------------------


def _guarded(handler: ast.ExceptHandler) -> bool:
    names = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
    kinds = handler.type
    if kinds is None:
        return True
    elements = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(isinstance(e, ast.Name) and e.id in names for e in elements)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _unguarded_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level module) of every absolute import, anywhere in the file, that runs
    unguarded: not in the body of a ``try`` catching ImportError (or wider), not under
    ``if TYPE_CHECKING:``."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.Import) and not guarded:
            found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not guarded and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
        if isinstance(node, ast.Try | ast.TryStar):
            catches = any(_guarded(h) for h in node.handlers)
            for child in node.body:
                visit(child, guarded or catches)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, guarded)
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, guarded)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def test_import_checker_sees_guards():
    tree = ast.parse(
        "import os\nimport tiktoken\ntry:\n    import tokenizers\nexcept ImportError:\n    pass\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import sentencepiece\n"
        "def f():\n    from foo.bar import x\n    from . import y\n"
        "try:\n    import baz\nexcept KeyError:\n    pass\n"
    )  # fmt: skip
    assert _unguarded_imports(tree) == [(1, "os"), (2, "tiktoken"), (7, "typing"), (11, "foo"),
                                        (14, "baz")]  # fmt: skip


def _browser_offenders() -> list[str]:
    provided = set(sys.stdlib_module_names) | BUNDLED | WITH_STLITE
    provided |= {re.split(r"[=<>!~\[ ;]", r, maxsplit=1)[0] for r in static.REQUIREMENTS}
    offenders = []
    for name in static.bundle_files(REPO):
        if not name.endswith(".py"):
            continue
        tree = ast.parse((REPO / name).read_text(encoding="utf-8"), filename=name)
        for line, module in _unguarded_imports(tree):
            if module not in provided:
                offenders.append(f"{name}:{line}: import {module}")
    return offenders


def test_bundled_code_imports_only_what_the_browser_has():
    offenders = _browser_offenders()
    assert not offenders, "unguarded imports the browser does not provide:\n" + "\n".join(offenders)


# ---- page addresses on a static host ---------------------------------------------------------

_RUN_REDIRECT = r"""
const [script, search, hash] = process.argv.slice(1);
globalThis.location = {search, hash, replace: (url) => process.stdout.write(url)};
eval(script);
"""


def test_every_page_address_redirects_to_home_with_its_view(dist):
    """/Tokenize?text=... (an address bar copied in the app) must open on a static host:
    Tokenize/index.html goes on to ../?page=Tokenize with the same query and fragment,
    which ui.links.follow_page_param opens (tests/test_links.py)."""
    from ui.site import PAGES

    paths = [p.url_path for p in PAGES if p.url_path]
    assert _load_static().page_paths(REPO) == paths
    node = shutil.which("node")
    if node is None:
        _skip_or_fail("node is not installed: run 'make node'")
    for path in paths:
        html = (dist / path / "index.html").read_text(encoding="utf-8")
        script = html.split("<script>", 1)[1].split("</script>", 1)[0]
        out = subprocess.run([node, "-e", _RUN_REDIRECT, script, "?text=na%C3%AFve+caf%C3%A9&k=3",
                              "#top"], capture_output=True, text=True, check=True, timeout=60)
        assert out.stdout == f"../?text=na%C3%AFve+caf%C3%A9&k=3&page={path}#top", out.stdout
