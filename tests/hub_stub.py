"""A local stand-in for the Hugging Face Hub's file endpoints, serving real tokenizer files.

``huggingface_hub`` talks to it exactly as to the Hub once ``HF_ENDPOINT`` points at it:

- ``HEAD``/``GET /<org>/<name>/resolve/<revision>/<file>``: ``X-Repo-Commit``, ``ETag`` and
  ``Content-Length`` on the file itself; a file marked LFS answers ``302`` to a CDN host (the
  same server as ``localhost``, which the client does not follow on ``HEAD``) with
  ``X-Linked-Etag`` and ``X-Linked-Size``, as the Hub does for large files; a renamed repo
  (``gpt2``) answers a relative ``307`` to its new name, which the client follows.
- ``GET /api/models/<repo>[/revision/<revision>]``: the repo's info with its ``siblings``
  (file names and sizes), what ``HfApi.model_info`` reads.
- dataset repos (``datasets=``) the same way, as the Hub serves them: ``/api/datasets/<repo>...``
  (``HfApi.dataset_info``) and ``/datasets/<repo>/resolve/<revision>/<file>``
  (``hf_hub_download(repo_type="dataset")``); files may sit in folders (``data/a.parquet``).
- errors as the Hub sends them: ``404`` + ``X-Error-Code: RepoNotFound`` for an unknown repo,
  ``RevisionNotFound``, ``EntryNotFound`` (with ``X-Repo-Commit``), and ``401`` +
  ``GatedRepo`` for a gated repo's files unless the request carries the stub's token.

The files are real: Meta's Llama 3 ``tokenizer.model`` made into a ``tokenizer.json`` by
``transformers`` (as the published one is), GPT-2's ``encoder.json``/``vocab.bpe`` (shipped
in ``core/data``) as ``vocab.json``/``merges.txt``, and Mistral's SentencePiece and Tekken
files from ``mistral_common``. Every request is logged, so a test can check that no weight
file was ever asked for.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path

#: The token a gated repo accepts (``Authorization: Bearer <TOKEN>``, i.e. ``HF_TOKEN``).
TOKEN = "hf_stub_token_for_tests"
WEIGHTS = b"\0" * 64  # stands for a model file: asking for it is a test failure


@dataclass
class Repo:
    """One model repo: its files, its one commit, and whether it is gated."""

    files: dict[str, bytes]
    gated: bool = False
    lfs: frozenset[str] = frozenset()  # files served through the CDN redirect
    sha: str = field(default="")

    def __post_init__(self) -> None:
        if not self.sha:
            h = hashlib.sha1()
            for name in sorted(self.files):
                h.update(name.encode() + b"\0" + hashlib.sha1(self.files[name]).digest())
            self.sha = h.hexdigest()


class HubStub(ThreadingHTTPServer):
    """The server: ``repos`` (model ID -> Repo), ``renamed`` (old ID -> new ID), ``datasets``
    (dataset ID -> Repo), ``requests`` (log)."""

    daemon_threads = True

    def __init__(self, repos: dict[str, Repo], renamed: dict[str, str] | None = None,
                 datasets: dict[str, Repo] | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.repos = repos
        self.renamed = dict(renamed or {})
        self.datasets = dict(datasets or {})
        self.requests: list[tuple[str, str]] = []
        self.blobs = {hashlib.sha256(d).hexdigest(): d
                      for r in [*repos.values(), *self.datasets.values()] for d in r.files.values()}
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    def get_request(self) -> tuple[socket.socket, object]:
        conn, addr = super().get_request()
        self._connections.add(conn)  # kept-alive connections are closed by stop() too
        return conn, addr

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a connection cut by stop(): nothing to report

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> HubStub:
        self._thread = threading.Thread(target=self.serve_forever, name="hub-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering and free the port (a stopped stub is an unreachable Hub)."""
        self.shutdown()
        self.server_close()
        for conn in list(self._connections):  # else a client's pooled connection still talks
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        if self._thread is not None:
            self._thread.join()

    def fetched(self) -> list[str]:
        """The file paths asked for with GET or HEAD on ``resolve`` (file names only)."""
        return [p.rsplit("/", 1)[-1] for _, p in self.requests if "/resolve/" in p]


class _Handler(BaseHTTPRequestHandler):
    server: HubStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
        pass

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self._answer(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(body=True)

    # ─── routing ───

    def _answer(self, *, body: bool) -> None:
        path = urllib.parse.urlsplit(self.path).path
        self.server.requests.append((self.command, path))
        if path.startswith("/cdn/"):
            data = self.server.blobs.get(path[5:])
            if data is None:
                return self._send(404, {}, b"", body)
            return self._send(200, {"ETag": f'"{path[5:]}"'}, data, body)
        if path.startswith("/api/models/"):
            return self._model_info(path[len("/api/models/"):], body)
        if path.startswith("/api/datasets/"):
            return self._model_info(path[len("/api/datasets/"):], body, dataset=True)
        if "/resolve/" in path:
            repo_id, _, rest = path.lstrip("/").partition("/resolve/")
            dataset = repo_id.startswith("datasets/")
            repo_id = repo_id.removeprefix("datasets/") if dataset else repo_id
            revision, _, file = rest.partition("/")
            return self._resolve(urllib.parse.unquote(repo_id), urllib.parse.unquote(revision),
                                 urllib.parse.unquote(file), body, dataset=dataset)
        self._send(404, {}, b"not found", body)

    def _repo(self, repo_id: str, body: bool, *, dataset: bool = False) -> Repo | None:
        repo = (self.server.datasets if dataset else self.server.repos).get(repo_id)
        if repo is None:
            self._send(404, {"X-Error-Code": "RepoNotFound",
                             "X-Error-Message": "Repository not found"}, b"", body)
        return repo

    def _revision_ok(self, repo: Repo, revision: str, body: bool) -> bool:
        if revision in ("main", repo.sha):
            return True
        self._send(404, {"X-Error-Code": "RevisionNotFound",
                         "X-Error-Message": "Invalid rev id"}, b"", body)
        return False

    def _model_info(self, rest: str, body: bool, *, dataset: bool = False) -> None:
        repo_id, _, revision = rest.partition("/revision/")
        repo_id, revision = urllib.parse.unquote(repo_id), urllib.parse.unquote(revision or "main")
        if repo_id in self.server.renamed and not dataset:  # the API moves with the repo too
            new = urllib.parse.quote(self.server.renamed[repo_id])
            rest = rest.partition("/revision/")[2]
            return self._send(307, {"Location": f"/api/models/{new}" + (f"/revision/{rest}" if rest else "")}, b"", body)
        repo = self._repo(repo_id, body, dataset=dataset)
        if repo is None or not self._revision_ok(repo, revision, body):
            return
        info = {
            "_id": repo.sha[:24], "id": repo_id, "modelId": repo_id, "sha": repo.sha,
            "private": False, "disabled": False, "gated": "manual" if repo.gated else False,
            "siblings": [{"rfilename": n, "size": len(d), "blobId": hashlib.sha1(d).hexdigest()}
                         for n, d in sorted(repo.files.items())],
        }  # fmt: skip
        self._send(200, {"Content-Type": "application/json"}, json.dumps(info).encode(), body)

    def _resolve(self, repo_id: str, revision: str, file: str, body: bool, *, dataset: bool = False) -> None:
        if repo_id in self.server.renamed and not dataset:  # the Hub's answer for a renamed repo: relative
            new = urllib.parse.quote(self.server.renamed[repo_id])
            location = f"/{new}/resolve/{urllib.parse.quote(revision, safe='')}/{urllib.parse.quote(file)}"
            return self._send(307, {"Location": location}, b"", body)
        repo = self._repo(repo_id, body, dataset=dataset)
        if repo is None or not self._revision_ok(repo, revision, body):
            return
        if repo.gated and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, {"X-Error-Code": "GatedRepo", "X-Error-Message":
                                    "Access to model is restricted. You must have access to "
                                    "it and be authenticated to access it. Please log in."}, b"", body)
        data = repo.files.get(file)
        if data is None:
            return self._send(404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": repo.sha,
                                    "X-Error-Message": "Entry not found"}, b"", body)
        digest = hashlib.sha256(data).hexdigest()
        headers = {"X-Repo-Commit": repo.sha}
        if file in repo.lfs:  # large files: the Hub redirects to its CDN, metadata on the 302
            host, port = self.server.server_address[:2]
            headers.update({"Location": f"http://localhost:{port}/cdn/{digest}",
                            "X-Linked-Etag": f'"{digest}"', "X-Linked-Size": str(len(data))})
            return self._send(302, headers, b"", body)
        headers["ETag"] = f'"{hashlib.sha1(data).hexdigest()}"'
        self._send(200, headers, data, body)

    def _send(self, status: int, headers: dict[str, str], data: bytes, body: bool) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body and data:
            self.wfile.write(data)


# ─── real files ─────────────────────────────────────────────────────────────────────────

LLAMA3 = "meta-llama/Llama-3.1-8B"  # gated, tokenizer.json + config + special tokens map
GPT2 = "openai-community/gpt2"  # vocab.json + merges.txt; "gpt2" was renamed to it
MISTRAL_SP = "mistralai/Mistral-7B-v0.1"  # tokenizer.model (SentencePiece)
MISTRAL_TEKKEN = "mistralai/Mistral-Nemo-Base-2407"  # tekken.json
WEIGHTS_ONLY = "stub-org/weights-only"  # config.json and a model file, no tokenizer


def llama3_tokenizer_json() -> bytes:
    """Meta's Llama 3 ``tokenizer.model`` as the Hub's ``tokenizer.json`` (made by
    ``transformers`` offline, with the BOS template the published file has)."""
    from llama_models.llama3.tokenizer import Tokenizer as Meta
    from tokenizers import processors
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path = Path(str(resources.files("llama_models").joinpath("llama3", "tokenizer.model")))
    meta = Meta(path)
    specials = sorted(meta.special_tokens, key=meta.special_tokens.get)
    hf = TikTokenConverter(vocab_file=str(path), pattern=meta.model._pat_str,
                           extra_special_tokens=specials).converted()
    bos = "<|begin_of_text|>"
    hf.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B:1",
                                      special_tokens=[(bos, meta.bos_id)]),
    ])  # fmt: skip
    return hf.to_str().encode("utf-8")


def _mistral(name: str) -> bytes:
    return resources.files("mistral_common").joinpath("data", name).read_bytes()


def _core_data(name: str) -> bytes:
    return gzip.decompress(resources.files("core").joinpath("data", name).read_bytes())


def real_repos(*, llama3_json: bytes | None = None) -> tuple[dict[str, Repo], dict[str, str]]:
    """The stub's repos and renames (``llama3_json``: a ready tokenizer.json, else made)."""
    config = json.dumps({"model_type": "llama"}).encode()
    llama_config = json.dumps({
        "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>",
        "model_max_length": 131072, "tokenizer_class": "PreTrainedTokenizerFast",
    }).encode()  # fmt: skip
    repos = {
        LLAMA3: Repo({
            "tokenizer.json": llama3_json or llama3_tokenizer_json(),
            "tokenizer_config.json": llama_config,
            "special_tokens_map.json": json.dumps({"bos_token": "<|begin_of_text|>"}).encode(),
            "config.json": config, "model-00001-of-00004.safetensors": WEIGHTS,
            "original/tokenizer.model": WEIGHTS,  # a subfolder's file is not the root's
        }, gated=True, lfs=frozenset({"tokenizer.json"})),
        GPT2: Repo({
            "vocab.json": _core_data("gpt2-encoder.json.gz"),
            "merges.txt": _core_data("gpt2-vocab.bpe.gz"),
            "config.json": config, "model.safetensors": WEIGHTS, "README.md": b"# gpt2\n",
        }),
        MISTRAL_SP: Repo({"tokenizer.model": _mistral("tokenizer.model.v1"),
                          "config.json": config, "pytorch_model.bin": WEIGHTS},
                         lfs=frozenset({"tokenizer.model"})),
        MISTRAL_TEKKEN: Repo({"tekken.json": _mistral("tekken_240718.json"),
                              "config.json": config}),
        WEIGHTS_ONLY: Repo({"config.json": config, "model.safetensors": WEIGHTS,
                            ".gitattributes": b"*.safetensors filter=lfs\n"}),
    }  # fmt: skip
    return repos, {"gpt2": GPT2}


def main() -> None:
    """``python -m tests.hub_stub``: serve the real repos until interrupted (prints the URL
    to put in ``HF_ENDPOINT``), for trying the app's picker by hand without the internet."""
    repos, renamed = real_repos()
    stub = HubStub(repos, renamed)
    print(f"HF_ENDPOINT={stub.url}  (gated repos accept HF_TOKEN={TOKEN})", flush=True)
    try:
        stub.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
