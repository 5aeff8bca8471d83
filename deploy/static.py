"""Build ``dist/``: the playground as a static site that runs in the browser, no server.

``make static`` (or ``python deploy/static.py --out dist``) writes a folder any static host
(GitHub Pages, ``python -m http.server``, a bucket) can serve:

- ``stlite/``: the npm package ``@stlite/browser`` (Streamlit on Pyodide, i.e. CPython
  compiled to WebAssembly), pinned to :data:`STLITE_VERSION`, without its source maps (71 of
  its 107 MB, never needed to run) and its TypeScript declarations;
- ``app.zip``: the app's own files (:func:`bundle_files`), which stlite unpacks into
  Pyodide's file system before it runs ``app.py``;
- ``index.html``: mounts stlite on the page with the Pyodide build pinned
  (:data:`PYODIDE_URL`) and the packages Pyodide must add (:data:`REQUIREMENTS`);
- ``.nojekyll``: many stlite chunks start with ``_``, which GitHub Pages' Jekyll would drop;
- ``manifest.json``: versions, requirements, each bundled file's size and SHA-256, sizes.

On first load the browser downloads Pyodide and its packages from cdn.jsdelivr.net;
everything after that runs in the tab. The npm package is installed once
into ``.cache/stlite`` (git-ignored) and reused, so later builds are offline.

    python deploy/static.py --out dist
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

STLITE_VERSION = "1.9.2"
# stlite 1.9.2's worker defaults to this build too; pinning it here keeps a stlite upgrade
# from silently changing the Python the site runs on.
PYODIDE_URL = "https://cdn.jsdelivr.net/pyodide/v0.29.3/full/pyodide.mjs"
# What the app imports beyond what stlite brings (streamlit, numpy, pandas): regex and jinja2
# (chat templates, core.chat.sandbox), both in Pyodide's own package set (charts are SVG
# drawn by ui.charts: no chart library).
REQUIREMENTS = ["regex", "jinja2"]

REPO = Path(__file__).resolve().parent.parent
PACKAGE_NAME = "@stlite/browser"
TITLE = "Tokenizer Playground"
# A fixed timestamp for every zip member (zip cannot store dates before 1980): the same
# sources give a byte-identical app.zip, so a rebuild does not look like a change.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_SKIPPED = {"__pycache__"}


def bundle_files(repo: Path) -> list[str]:
    """The files the app needs at run time, as sorted POSIX paths relative to ``repo``.

    ``app.py``, ``pages/*.py``, every ``*.py`` under ``ui/``, ``training/`` and ``core/``,
    the shipped vocabularies in ``core/data/`` and ``.streamlit/config.toml`` (theme, sidebar,
    runner settings). Nothing else: tests, benchmarks and the venv would only make the download
    bigger.
    """
    found: set[Path] = {repo / "app.py", repo / ".streamlit" / "config.toml"}
    found.update((repo / "pages").glob("*.py"))
    for package in ("ui", "training", "core"):
        found.update(
            path
            for path in (repo / package).rglob("*.py")
            if not _SKIPPED.intersection(path.relative_to(repo).parts)
        )
    found.update(path for path in (repo / "core" / "data").iterdir() if path.is_file())
    missing = sorted(str(path) for path in found if not path.is_file())
    if missing:
        raise FileNotFoundError(f"app files missing: {', '.join(missing)}")
    return sorted(path.relative_to(repo).as_posix() for path in found)


def _package_dir(cache_dir: Path) -> Path:
    return cache_dir / "node_modules" / "@stlite" / "browser"


def _installed_version(package: Path) -> str | None:
    try:
        return json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        return None


def _npm_error(output: str) -> str:
    """npm's own words for a failure: its ``code`` and first message line, not the stack
    trace or the closing "A complete log of this run..." pointer."""
    lines = [line.removeprefix("npm error").strip() for line in output.splitlines()
             if line.startswith(("npm error", "npm ERR!"))]  # fmt: skip
    lines = [line.removeprefix("ERR!").strip() for line in lines]
    useful = [line for line in lines
              if line and not line.startswith(("at ", "A complete log", "errno ", "syscall "))]  # fmt: skip
    if useful:
        return "; ".join(useful[:2])
    return (output.strip().splitlines() or ["no output"])[-1]


def ensure_stlite(cache_dir: Path) -> Path:
    """The ``build/`` folder of ``@stlite/browser@STLITE_VERSION``, installed into
    ``cache_dir`` by npm only when it is missing or another version is there.

    Raises RuntimeError naming the cause when npm is missing or fails (no registry, proxy).
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    # subtle: two test workers (pytest -n 2) or two builds may get here at once; npm writing
    # into one prefix twice leaves a half-installed package for the other to read
    with _locked(cache_dir / ".install.lock"):
        return _ensure_stlite_locked(cache_dir)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` while the block runs (none where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # Windows: one build at a time is the user's business
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _ensure_stlite_locked(cache_dir: Path) -> Path:
    package = _package_dir(cache_dir)
    build_dir = package / "build"
    if _installed_version(package) == STLITE_VERSION and (build_dir / "stlite.js").is_file():
        return build_dir
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            f"npm is needed to fetch {PACKAGE_NAME}@{STLITE_VERSION} once "
            "(`make node`, or apt-get install nodejs npm)"
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # subtle: npm applies its `cafile` setting to some requests only; behind a proxy with its
    # own CA (the system bundle has it) node must be told too, or a fresh HOME fails TLS
    bundle = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
    if "NODE_EXTRA_CA_CERTS" not in env and os.path.isfile(bundle):
        env["NODE_EXTRA_CA_CERTS"] = bundle
    command = [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix",
               str(cache_dir), f"{PACKAGE_NAME}@{STLITE_VERSION}"]  # fmt: skip
    try:
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600,
                              env=env)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as err:
        raise RuntimeError(f"npm could not install {PACKAGE_NAME}@{STLITE_VERSION}: {err}") from err
    version = _installed_version(package)
    if done.returncode != 0 or version != STLITE_VERSION or not (build_dir / "stlite.js").is_file():
        error = _npm_error(done.stderr or done.stdout)
        raise RuntimeError(
            f"npm could not install {PACKAGE_NAME}@{STLITE_VERSION} into {cache_dir} "
            f"(exit {done.returncode}, found version {version}): {error}"
        )
    return build_dir


def _write_zip(target: Path, repo: Path, names: list[str]) -> None:
    """``names`` (sorted) into ``target``, deflated, with fixed dates and permissions."""
    with zipfile.ZipFile(target, "w") as archive:
        for name in names:
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3  # Unix, so the permissions above mean what they say
            archive.writestr(info, (repo / name).read_bytes(), compresslevel=9)


def _script_json(value: object) -> str:
    """``value`` as JSON safe inside a ``<script>``: ``</`` would end the element early."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


def mount_options() -> dict:
    """The options ``index.html`` passes to stlite's ``mount``."""
    return {
        "entrypoint": "app.py",
        "archives": [{"url": "./app.zip", "format": "zip"}],
        "requirements": list(REQUIREMENTS),
        "pyodideUrl": PYODIDE_URL,
        "env": {},
    }


def index_html() -> str:
    """The page: a loading note (removed once the app draws its first text) and the module
    mounting stlite.

    The options are one JSON literal on one line (``const options = {...};``) so a test can
    read them back with ``json.loads``.
    """
    pyodide_version = PYODIDE_URL.split("/pyodide/v", 1)[1].split("/", 1)[0]
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{TITLE}</title>
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 100 100'%3E%3Ctext y='.9em' font-size='90'%3E%F0%9F%A7%A9%3C/text%3E%3C/svg%3E">
<link rel="stylesheet" href="./stlite/stlite.css">
</head>
<body>
<div id="loading-note" style="position: fixed; left: 1rem; bottom: 1rem; z-index: 2147483647;
 max-width: 34rem; padding: 0 1rem; background: #fff; border: 1px solid #d0d4e0;
 border-radius: 0.5rem; font-family: sans-serif; font-size: 0.9rem; line-height: 1.45">
<p><strong>Loading the {TITLE}&hellip;</strong></p>
<p>On first load this page downloads Python (Pyodide {pyodide_version}) and its packages from
cdn.jsdelivr.net. That takes some seconds; after that the playground runs entirely in this
browser tab, with no server. If it never starts, check that this browser can reach
cdn.jsdelivr.net.</p>
</div>
<div id="root"></div>
<noscript>The {TITLE} runs Python in your browser and needs JavaScript; please enable it.</noscript>
<script type="module">
import {{ mount }} from "./stlite/stlite.js";
const options = {_script_json(mount_options())};
mount(options, document.getElementById("root"));
// the note (fixed: stlite's app covers the page) stays until the app draws its first text,
// so a page that cannot reach the CDN still says why it is empty, next to stlite's error
const note = document.getElementById("loading-note");
new MutationObserver((_, observer) => {{
  if (document.querySelector('#root [data-testid="stMarkdownContainer"]')) {{
    note.remove();
    observer.disconnect();
  }}
}}).observe(document.getElementById("root"), {{ childList: true, subtree: true }});
</script>
</body>
</html>
"""


def page_paths(repo: Path) -> list[str]:
    """The URL paths of the app's pages, by Streamlit's rule (``pages/2_Tokenize.py`` is
    served at ``Tokenize``: the number and underscore dropped).

    >>> page_paths(REPO)[:2]
    ['Train', 'Tokenize']
    """
    return [re.sub(r"^\d+_", "", path.stem) for path in sorted((repo / "pages").glob("*.py"))]


def redirect_html(page: str) -> str:
    """``<page>/index.html``: a static host serves ``/Tokenize?text=...`` (an address bar
    copied in the app) from here; it goes on to ``../?page=Tokenize&text=...``, which the
    app's Home opens as that page (``ui.links.follow_page_param``)."""
    target = _script_json(page)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{TITLE}</title>
<script>
const params = new URLSearchParams(location.search);
params.set("page", {target});
location.replace("../?" + params.toString() + location.hash);
</script>
</head>
<body><p><a href="../?page={page}">Open {page}</a></p></body>
</html>
"""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build(out: Path, *, repo: Path, stlite_build: Path) -> dict:
    """Recreate ``out`` as the static site and return its manifest (also in manifest.json).

    ``out`` is deleted first, so it must not be ``repo`` or one of its parents (ValueError).
    ``total_bytes`` counts every file in ``out`` except manifest.json itself.
    """
    out, repo = out.resolve(), repo.resolve()
    if out == repo or out in repo.parents:
        raise ValueError(f"refusing to delete {out}: it is the repository or holds it")
    if not (stlite_build / "stlite.js").is_file():
        raise FileNotFoundError(f"{stlite_build} is not stlite's build folder (no stlite.js)")
    names = bundle_files(repo)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copytree(stlite_build, out / "stlite", ignore=shutil.ignore_patterns("*.map", "*.d.ts"))
    _write_zip(out / "app.zip", repo, names)
    (out / "index.html").write_text(index_html(), encoding="utf-8")
    for page in page_paths(repo):  # /Tokenize?... from a copied address bar
        (out / page).mkdir()
        (out / page / "index.html").write_text(redirect_html(page), encoding="utf-8")
    (out / ".nojekyll").write_bytes(b"")
    manifest = {
        "stlite": STLITE_VERSION,
        "pyodide": PYODIDE_URL,
        "requirements": list(REQUIREMENTS),
        "files": {
            name: {"bytes": (repo / name).stat().st_size, "sha256": _sha256(repo / name)}
            for name in names
        },
        "app_zip_bytes": (out / "app.zip").stat().st_size,
        "total_bytes": sum(path.stat().st_size for path in out.rglob("*") if path.is_file()),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def main(argv: list[str] | None = None) -> int:
    """CLI: build the site and print one summary line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="output folder (recreated)")
    parser.add_argument("--cache", type=Path, default=REPO / ".cache" / "stlite",
                        help="npm prefix holding @stlite/browser (reused between builds)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        stlite_build = ensure_stlite(args.cache)
        manifest = build(args.out, repo=REPO, stlite_build=stlite_build)
    except (RuntimeError, ValueError, FileNotFoundError) as err:
        parser.exit(1, f"static build failed: {err}\n")
    count = sum(1 for path in args.out.rglob("*") if path.is_file())
    print(
        f"{args.out}: {len(manifest['files'])} app files in app.zip "
        f"({_megabytes(manifest['app_zip_bytes'])}), {count} files "
        f"{_megabytes(manifest['total_bytes'])} total, stlite {manifest['stlite']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
