"""GGUF models on this machine: Ollama's manifests and blobs, LM Studio's folders and the
folders a server's operator names, all under a fake HOME."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from core.formats import gguf_local
from core.formats.gguf import write_gguf
from core.formats.gguf_local import LocalGGUF, local_gguf_models
from core.formats.gguf_vocab import tokenizer_from_gguf

GGUF = write_gguf({
    "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gpt-2",
    "tokenizer.ggml.tokens": ["h", "i", "hi"], "tokenizer.ggml.merges": ["h i"],
})  # fmt: skip


def ollama_model(home: Path, name: tuple[str, str, str, str], blob: bytes) -> Path:
    """Write a model as Ollama does: the blob by digest, the manifest by name."""
    models = home / ".ollama" / "models"
    digest = hashlib.sha256(blob).hexdigest()
    path = models / "blobs" / f"sha256-{digest}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    manifest = models / "manifests" / Path(*name)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64},
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}",
         "size": len(blob)},  # fmt: skip
    ]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))
    return path


def write(path: Path, data: bytes = GGUF) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def names(models: list[LocalGGUF]) -> list[tuple[str, str]]:
    return [(m.source, m.name) for m in models]


def test_ollama_names_as_ollama_list_does(tmp_path: Path) -> None:
    blob = ollama_model(tmp_path, ("registry.ollama.ai", "library", "llama3.2", "latest"), GGUF)
    ollama_model(tmp_path, ("registry.ollama.ai", "someone", "tiny", "q4"), GGUF + b"\0")
    ollama_model(tmp_path, ("hf.co", "bartowski", "Llama-GGUF", "Q4_K_M"), GGUF + b"\0\0")
    found = local_gguf_models(home=tmp_path, env={})
    assert names(found) == [
        ("ollama", "hf.co/bartowski/Llama-GGUF:Q4_K_M"),
        ("ollama", "llama3.2:latest"),
        ("ollama", "someone/tiny:q4"),
    ]
    first = found[1]
    assert first.path == str(blob) and first.size == len(GGUF)
    assert tokenizer_from_gguf(first.path).encode("hi") == [2]  # opened in place, not copied


def test_ollama_models_env_and_broken_manifests(tmp_path: Path) -> None:
    store = tmp_path / "elsewhere"
    models = store / "manifests" / "registry.ollama.ai" / "library"
    write(models / "bad" / "json", b"{not json")
    write(models / "list" / "json", b"[1, 2]")
    # a digest that is not sha256:<hex> must not name a file outside blobs/
    secret = write(tmp_path / "secret.gguf")
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": f"../../{secret.name}"}
    write(models / "escape" / "latest", json.dumps({"layers": [layer]}).encode())
    # a manifest whose blob is not GGUF (or missing)
    digest = "sha256:" + "a" * 64
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": digest}
    write(models / "notgguf" / "latest", json.dumps({"layers": [layer]}).encode())
    write(store / "blobs" / ("sha256-" + "a" * 64), b"not a gguf")
    assert local_gguf_models(home=tmp_path, env={"OLLAMA_MODELS": str(store)}) == []


def test_lm_studio_and_folders(tmp_path: Path) -> None:
    write(tmp_path / ".lmstudio/models/lmstudio-community/Qwen3-GGUF/Qwen3-Q4_K_M.gguf")
    write(tmp_path / ".lmstudio/models/lmstudio-community/Qwen3-GGUF/mmproj-Qwen3-f16.gguf")
    write(tmp_path / ".cache/lm-studio/models/old/repo/model-00001-of-00002.gguf")
    write(tmp_path / ".cache/lm-studio/models/old/repo/model-00002-of-00002.gguf")
    write(tmp_path / ".lmstudio/models/x/y/fake.gguf", b"PK\x03\x04 not gguf")
    write(tmp_path / ".lmstudio/models/x/y/readme.md", b"GGUF")
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    write(mine / "a.gguf")
    write(theirs / "deep/b.GGUF")
    env = {gguf_local.ENV_DIRS: os.pathsep.join([str(mine), str(theirs), ""])}
    assert names(local_gguf_models(home=tmp_path, env=env)) == [
        ("folder", "a.gguf"),
        ("folder", "deep/b.GGUF"),
        ("lm-studio", "lmstudio-community/Qwen3-GGUF/Qwen3-Q4_K_M.gguf"),
        ("lm-studio", "old/repo/model-00001-of-00002.gguf"),
    ]
    # dirs= replaces the environment's folders
    assert names(local_gguf_models(home=tmp_path, env=env, dirs=[str(mine)]))[0] == ("folder", "a.gguf")
    assert len(local_gguf_models(home=tmp_path, env=env, dirs=[])) == 2


def test_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / "d"
    write(deep / "1/2/3/found.gguf")
    write(deep / "1/2/3/4/5/6/7/8/too-deep.gguf")
    (deep / "loop").symlink_to(deep, target_is_directory=True)  # never followed
    assert names(local_gguf_models(home=tmp_path, env={}, dirs=[str(deep)])) == [
        ("folder", "1/2/3/found.gguf")
    ]
    for i in range(5):
        write(tmp_path / "many" / f"m{i}.gguf")
    monkeypatch.setattr(gguf_local, "MAX_MODELS", 3)
    assert len(local_gguf_models(home=tmp_path, env={}, dirs=[str(tmp_path / "many")])) == 3
    monkeypatch.setattr(gguf_local, "MAX_ENTRIES", 2)
    assert len(local_gguf_models(home=tmp_path, env={}, dirs=[str(tmp_path / "many")])) == 2


def test_same_file_listed_once(tmp_path: Path) -> None:
    write(tmp_path / "m" / "a.gguf")
    assert len(local_gguf_models(home=tmp_path, env={}, dirs=[str(tmp_path / "m")] * 2)) == 1


def test_default_home_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    monkeypatch.setenv(gguf_local.ENV_DIRS, str(tmp_path / "m"))
    write(tmp_path / "m" / "a.gguf")
    ollama_model(tmp_path, ("registry.ollama.ai", "library", "tiny", "latest"), GGUF)
    assert names(local_gguf_models()) == [("folder", "a.gguf"), ("ollama", "tiny:latest")]
