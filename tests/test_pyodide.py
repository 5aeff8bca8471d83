"""core under Pyodide (CPython compiled to WebAssembly), run by Node: trains, encodes and
decodes exactly as in this CPython, on the ``re`` stand-in for ``regex`` and in one process.

Setup, once: ``npm install pyodide@PYODIDE_VERSION`` into ``.cache/pyodide`` (git-ignored;
reused by later runs, which are offline). Without node/npm the test skips saying so; under
``CI=true`` it fails instead, like :func:`tests.conftest.need_module`. If npm cannot install
the package (no registry), the skip names npm's error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from core.train.builtin_corpus import builtin_corpus_text
from tests.conftest import REPO
from tests.test_regex_compat import MULTILINGUAL

PYODIDE_VERSION = "314.0.7"  # Python 3.14, Unicode 16
CACHE = REPO / ".cache" / "pyodide"
PACKAGE = CACHE / "node_modules" / "pyodide"

# Runs in Pyodide and, for the expected results, here: train, encode, decode per pattern.
_WORK = """
import json, sys, unicodedata
import core
from core.engine.regex_compat import HAVE_REGEX

def work(texts):
    out = {"python": sys.version.split()[0], "unicode": unicodedata.unidata_version,
           "have_regex": HAVE_REGEX}
    for pattern in ("gpt2", "cl100k", "o200k"):
        vocab, merges = core.train_bpe(texts, 360, ["<|endoftext|>"], pattern=pattern,
                                       num_workers=1)
        tok = core.Tokenizer(vocab, merges, ["<|endoftext|>"], pattern=pattern)
        ids = [tok.encode(t) for t in texts]
        out[pattern] = {"merges": [[a.hex(), b.hex()] for a, b in merges], "ids": ids,
                        "round_trip": [tok.decode(i) for i in ids] == texts}
    trainer = core.BPETrainer(texts, 300, num_workers=2)
    out["two_workers"] = {"merges": len(trainer.run()[1]), "messages": trainer.messages}
    return out
"""

_NODE = """
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
const [pkg, repo, inputPath] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(join(pkg, "pyodide.mjs")).href);
const py = await loadPyodide({ indexURL: pkg + "/" });
// copy core/ (Python files and data) into Pyodide's file system
const walk = (dir) => readdirSync(dir).flatMap((name) => {
  const path = join(dir, name);
  if (name === "__pycache__") return [];
  return statSync(path).isDirectory() ? walk(path) : [path];
});
for (const path of walk(join(repo, "core"))) {
  const target = "/home/pyodide/" + relative(repo, path);
  py.FS.mkdirTree(target.slice(0, target.lastIndexOf("/")));
  py.FS.writeFile(target, readFileSync(path));
}
py.FS.writeFile("/home/pyodide/input.json", readFileSync(inputPath));
const out = py.runPython(readFileSync(inputPath + ".py", "utf8"));
process.stdout.write(out);
"""


def _skip_or_fail(message: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + "; CI must run it", pytrace=False)
    pytest.skip(message)


def _pyodide_package() -> Path:
    """The pinned npm package, installed into .cache/pyodide on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _skip_or_fail("node and npm are needed to run core under Pyodide (apt-get install nodejs npm)")
    manifest = PACKAGE / "package.json"
    if not manifest.exists() or json.loads(manifest.read_text())["version"] != PYODIDE_VERSION:
        CACHE.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        # subtle: npm applies its `cafile` setting to some requests only; behind a proxy with
        # its own CA (the system bundle has it) node must be told too, or a fresh HOME fails
        bundle = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
        if "NODE_EXTRA_CA_CERTS" not in env and os.path.isfile(bundle):
            env["NODE_EXTRA_CA_CERTS"] = bundle
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE),
             f"pyodide@{PYODIDE_VERSION}"],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        if done.returncode != 0 or not manifest.exists():
            _skip_or_fail(
                f"npm could not install pyodide@{PYODIDE_VERSION} into {CACHE}: "
                + (done.stderr.strip().splitlines() or ["no output"])[-1]
            )
    return PACKAGE


def _texts() -> list[str]:
    corpus = builtin_corpus_text()
    return [MULTILINGUAL, corpus[:12_000], corpus[-8_000:], "DON'T stop<|endoftext|>我们 don't"]


def test_core_runs_under_pyodide_exactly_as_in_cpython(tmp_path):
    package = _pyodide_package()
    texts = _texts()
    inputs = tmp_path / "input.json"
    inputs.write_text(json.dumps(texts))
    Path(f"{inputs}.py").write_text(
        "import sys; sys.path.insert(0, '/home/pyodide')\n" + _WORK
        + "json.dumps(work(json.load(open('/home/pyodide/input.json'))))"
    )  # fmt: skip
    script = tmp_path / "run.mjs"
    script.write_text(_NODE)
    done = subprocess.run(
        [shutil.which("node") or "node", str(script), str(package), str(REPO), str(inputs)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    in_pyodide = json.loads(done.stdout)

    scope: dict = {}
    exec(_WORK, scope)
    here = scope["work"](texts)

    assert in_pyodide["have_regex"] is False  # the stand-in on `re` did the pre-tokenizing
    assert in_pyodide["python"].startswith("3.1") and in_pyodide["unicode"] >= "15"
    for pattern in ("gpt2", "cl100k", "o200k"):
        assert in_pyodide[pattern]["round_trip"], pattern
        assert in_pyodide[pattern]["merges"] == here[pattern]["merges"], pattern
        assert in_pyodide[pattern]["ids"] == here[pattern]["ids"], pattern
    two = in_pyodide["two_workers"]
    assert two["merges"] == here["two_workers"]["merges"]
    assert any("Counted in this one process, not 2 workers" in m for m in two["messages"]), two
