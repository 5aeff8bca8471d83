"""Real models' tokenizer files: do they load, do they match their own library, how fast?

    .venv/bin/python benchmarks/real_models.py                  # every document of both corpora
    .venv/bin/python benchmarks/real_models.py --docs 200       # 200 documents per corpus
    .venv/bin/python benchmarks/real_models.py --corpus a.txt.gz b.txt.gz --only llama3,v7
    .venv/bin/python benchmarks/real_models.py --json           # + transformers-made tokenizer.json

For each file (Meta's Llama 3/4 ``tokenizer.model``, OpenAI's cl100k_base/o200k_base
``.tiktoken``, Mistral's Tekken json and SentencePiece ``.model`` files, two Unigram
``.model`` files trained here on the built-in corpus (no installed package ships one); with
``--json`` also the tokenizer.json files ``transformers`` makes from them, see
tests/test_real_models.py) it
prints one Markdown row:

- loads: whether ``load_tokenizer_files({basename: bytes})``, with no other argument, loads
  it, as which format and class;
- load: seconds for ours against the oracle's own constructor from the same file, best of
  ``--load-runs`` interleaved runs: ours cold (the table cache, core.formats.table_cache, off)
  and warm (a model opened before: its cached tables); the ratios should stay under 1.5x
  cold and 1.0x warm. For llama.cpp's GGUF files (``make test-data``), the model's own
  library on its own file: tiktoken's gpt2, ``tokenizers`` on Llama 3's tokenizer.json,
  ``sentencepiece`` on the ``.model`` the GGUF holds;
- mismatching documents per corpus: documents whose IDs (``add_special_tokens=False``) or
  whose decoded text differ from the oracle's;
- encode MB/s (UTF-8 input) per corpus, ours against the oracle, with a cold cache: our
  tokenizer's pre-token cache is cleared before each corpus, then every document is encoded
  once; ours and the oracle's encode alternate document by document, so a busy machine slows
  both alike. The oracles are Rust (tiktoken, tokenizers) or C++ (sentencepiece).

Oracles: Meta's ``llama_models`` tokenizer's own tiktoken ``Encoding`` (its ``encode`` also
cuts inputs over 400,000 characters and runs over 25,000 characters, which would change IDs
of a few long documents; this compares the tokenizer, not that workaround), with
``allowed_special="all"``; tiktoken's ``get_encoding`` kwargs; ``mistral_common``'s
``Tekkenizer``; ``sentencepiece``; ``tokenizers``. The corpora are files of documents
joined with ``<|endoftext|>`` (gzipped or not).
"""

from __future__ import annotations

import argparse
import gc
import glob
import gzip
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DEFAULT_CORPORA = str(REPO.parent / "shared" / "corpora" / "*.txt.gz")
SEPARATOR = "<|endoftext|>"

from core.formats import identify_files, load_tokenizer_files  # noqa: E402
from core.presets import PRESETS, preset_files  # noqa: E402

MISTRAL = {
    "v1": "tokenizer.model.v1",
    "v2": "mistral_instruct_tokenizer_240216.model.v2",
    "v3": "mistral_instruct_tokenizer_240323.model.v3",
    "v7": "mistral_instruct_tokenizer_241114.model.v7",
    "tekken_240718": "tekken_240718.json",
    "tekken_240911": "tekken_240911.json",
}
FORMATS = {
    "tiktoken": "tiktoken rank file",
    "tekken": "Tekken json",
    "sentencepiece": "SentencePiece .model",
    "hf": "tokenizer.json",
    "gguf": "GGUF",
}
# llama.cpp's vocab-only GGUF files (`make test-data`) and the library each model's IDs come from
GGUF_DIR = REPO / ".cache" / "test-data" / "llama.cpp" / "models"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()  # start every timing with no garbage from the previous one pending
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


# ─── files and oracles ──────────────────────────────────────────────────────────────────


@dataclass
class Oracle:
    load: Callable[[], Any]  # builds the oracle from the file (timed)
    encode: Callable[[Any, str], list[int]]
    decode: Callable[[Any, list[int]], str]


@dataclass
class Row:
    key: str
    label: str  # shown in the table
    file_name: str
    data: Callable[[], bytes]
    oracle: Callable[[bytes, Path], Oracle]
    cells: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _meta_path(version: str) -> Path:
    return Path(str(resources.files("llama_models").joinpath(version, "tokenizer.model")))


def _mistral_path(key: str) -> Path:
    return Path(str(resources.files("mistral_common").joinpath("data", MISTRAL[key])))


def _meta_oracle(version: str) -> Callable[[bytes, Path], Oracle]:
    def make(data: bytes, tmp: Path) -> Oracle:
        def load() -> Any:
            if version == "llama3":
                from llama_models.llama3.tokenizer import Tokenizer as Meta
            else:
                from llama_models.llama4.tokenizer import Tokenizer as Meta
            return Meta(_meta_path(version))

        return Oracle(
            load,
            lambda meta, text: meta.model.encode(text, allowed_special="all"),
            lambda meta, ids: meta.decode(ids),
        )

    return make


def _openai_oracle(name: str) -> Callable[[bytes, Path], Oracle]:
    def make(data: bytes, tmp: Path) -> Oracle:
        def load() -> Any:
            import tiktoken
            from tiktoken_ext import openai_public

            # a fresh Encoding from the file (get_encoding would return its cached one)
            return tiktoken.Encoding(**getattr(openai_public, name)())

        return Oracle(
            load,
            lambda enc, text: enc.encode(text, allowed_special="all"),
            lambda enc, ids: enc.decode(ids),
        )

    return make


def _tekken_oracle(key: str) -> Callable[[bytes, Path], Oracle]:
    def make(data: bytes, tmp: Path) -> Oracle:
        from mistral_common.tokens.tokenizers.tekken import (
            SpecialTokenPolicy,
            Tekkenizer,
        )

        return Oracle(
            lambda: Tekkenizer.from_file(str(_mistral_path(key))),
            lambda tk, text: tk.encode(text, bos=False, eos=False),
            lambda tk, ids: tk.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP),
        )

    return make


def _sp_oracle(data: bytes, tmp: Path) -> Oracle:
    import sentencepiece as spm

    return Oracle(
        lambda: spm.SentencePieceProcessor(model_proto=data),
        lambda sp, text: sp.encode(text),
        lambda sp, ids: sp.decode(ids),
    )


def _hf_oracle(data: bytes, tmp: Path) -> Oracle:
    import tokenizers

    text = data.decode("utf-8")
    return Oracle(
        lambda: tokenizers.Tokenizer.from_str(text),
        lambda hf, s: hf.encode(s, add_special_tokens=False).ids,
        lambda hf, ids: hf.decode(ids, skip_special_tokens=False),
    )


def _gguf_bytes(name: str) -> Callable[[], bytes]:
    return lambda: (GGUF_DIR / f"ggml-vocab-{name}.gguf").read_bytes()


def _gguf_sp_oracle(data: bytes, tmp: Path) -> Oracle:
    """sentencepiece on the ``.model`` written from the GGUF (llama / t5 vocabs)."""
    from core.formats.gguf import read_gguf_metadata
    from core.formats.gguf_vocab import sentencepiece_model_from_gguf

    return _sp_oracle(sentencepiece_model_from_gguf(read_gguf_metadata(data)), tmp)


def _gguf_llama3_oracle(data: bytes, tmp: Path) -> Oracle:
    """tokenizers on Llama 3's tokenizer.json (the tests' transformers recipe)."""
    return _hf_oracle(_hf_json_bytes("llama3", tmp)(), tmp)


def _openai_bytes(name: str) -> Callable[[], bytes]:
    return lambda: gzip.decompress(
        resources.files("core").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    )


def _hf_json_bytes(source: str, tmp: Path) -> Callable[[], bytes]:
    def make() -> bytes:
        from tests.test_real_models import (
            _make_hf_json,  # the tests' transformers recipes
        )

        return _make_hf_json(source, tmp).encode("utf-8")

    return make


def _unigram_bytes(**options: Any) -> Callable[[], bytes]:
    """A Unigram ``.model`` trained here by sentencepiece on the built-in corpus (no Unigram
    model ships in a package we install): 8,000 pieces, ``nmt_nfkc`` unless told."""

    def make() -> bytes:
        import io

        import sentencepiece as spm

        from core.builtin_corpus import builtin_corpus_text

        lines = [ln for ln in builtin_corpus_text().splitlines() if ln.strip()]
        out = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=out, model_type="unigram",
            vocab_size=8000, minloglevel=2, **options,
        )  # fmt: skip
        return out.getvalue()

    return make


def _unigram_json_bytes(how: str, tmp: Path) -> Callable[[], bytes]:
    """That model as transformers converts it: ``T5Converter`` (the ``Precompiled``
    normalizer, as published T5 files have it) or ``XLMRobertaTokenizer``'s backend."""

    def make() -> bytes:
        import importlib

        import transformers

        # (the module, not transformers' function of the same name)
        convert_slow_tokenizer = importlib.import_module("transformers.convert_slow_tokenizer")

        path = tmp / "unigram-spiece.model"
        path.write_bytes(_unigram_bytes()())
        if how == "t5":
            slow = transformers.T5Tokenizer(vocab_file=str(path))
            return convert_slow_tokenizer.T5Converter(slow).converted().to_str().encode()
        xlmr = transformers.XLMRobertaTokenizer(vocab_file=str(path))
        return xlmr.backend_tokenizer.to_str().encode()

    return make


def rows(with_json: bool, tmp: Path) -> list[Row]:
    out = [
        Row("llama3", "Llama 3 `tokenizer.model`", "tokenizer.model",
            lambda: _meta_path("llama3").read_bytes(), _meta_oracle("llama3")),
        Row("llama4", "Llama 4 `tokenizer.model`", "tokenizer.model",
            lambda: _meta_path("llama4").read_bytes(), _meta_oracle("llama4")),
        Row("cl100k_base", "`cl100k_base.tiktoken`", "cl100k_base.tiktoken",
            _openai_bytes("cl100k_base"), _openai_oracle("cl100k_base")),
        Row("o200k_base", "`o200k_base.tiktoken`", "o200k_base.tiktoken",
            _openai_bytes("o200k_base"), _openai_oracle("o200k_base")),
    ]  # fmt: skip
    for key, file_name in MISTRAL.items():
        oracle = _tekken_oracle(key) if key.startswith("tekken") else _sp_oracle
        out.append(Row(key, f"`{file_name}`", file_name,
                       (lambda k=key: _mistral_path(k).read_bytes()), oracle))  # fmt: skip
    out += [
        Row("unigram", "Unigram `.model` (8k, nmt_nfkc, trained here)", "spiece.model",
            _unigram_bytes(), _sp_oracle),
        Row("unigram-bytes", "Unigram `.model` (8k, byte fallback, trained here)",
            "spiece.model", _unigram_bytes(byte_fallback=True), _sp_oracle),
    ]  # fmt: skip
    out += [
        Row("gguf-gpt-2", "GGUF `ggml-vocab-gpt-2`", "gpt-2.gguf", _gguf_bytes("gpt-2"),
            _openai_oracle("gpt2")),
        Row("gguf-llama-bpe", "GGUF `ggml-vocab-llama-bpe` (Llama 3)", "llama-bpe.gguf",
            _gguf_bytes("llama-bpe"), _gguf_llama3_oracle),
        Row("gguf-llama-spm", "GGUF `ggml-vocab-llama-spm` (Llama 2)", "llama-spm.gguf",
            _gguf_bytes("llama-spm"), _gguf_sp_oracle),
        Row("gguf-nomic-bert-moe", "GGUF `ggml-vocab-nomic-bert-moe` (t5, Unigram)",
            "nomic-bert-moe.gguf", _gguf_bytes("nomic-bert-moe"), _gguf_sp_oracle),
    ]  # fmt: skip
    if with_json:
        for source in ("llama3", "llama4", "tekken_240911", "v1-legacy", "v1", "v3", "v7"):
            out.append(Row(f"hf-{source}", f"HF json from {source}", "tokenizer.json",
                           _hf_json_bytes(source, tmp), _hf_oracle))  # fmt: skip
        for how in ("t5", "xlmr"):
            out.append(Row(f"hf-unigram-{how}", f"HF json from the Unigram model ({how})",
                           "tokenizer.json", _unigram_json_bytes(how, tmp), _hf_oracle))  # fmt: skip
    return out


# ─── corpora ────────────────────────────────────────────────────────────────────────────


def read_corpus(path: Path, docs: int | None) -> list[str]:
    """The documents of ``path``; with ``docs``, that many at a fixed stride."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        found = [d for d in fh.read().split(SEPARATOR) if d]
    if docs is not None and docs < len(found):
        stride = len(found) / docs
        found = [found[int(i * stride + stride / 2)] for i in range(docs)]
    return found


def corpus_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".txt"):
        name = name.removesuffix(suffix)
    return name


# ─── one row ────────────────────────────────────────────────────────────────────────────


def clear(tok: Any) -> None:
    """Empty our tokenizer's caches (cold-cache timing)."""
    for owner in (tok, getattr(tok, "model", None)):
        if owner is not None and hasattr(owner, "clear_cache"):
            owner.clear_cache()


def first_difference(ours: list[int], want: list[int]) -> str:
    i = next((k for k, (a, b) in enumerate(zip(ours, want)) if a != b), min(len(ours), len(want)))
    return f"ID #{i}: ours {ours[max(0, i - 2):i + 5]} vs oracle {want[max(0, i - 2):i + 5]}"


#: Interleaved load timings per row (best of this many); `--load-runs` sets it.
LOAD_RUNS = 3


def load_cell(row: Row, data: bytes, oracle: Oracle, t_cold: float, t_oracle: float) -> str:
    """Load seconds, best of LOAD_RUNS, ours and the oracle's interleaved: ours cold (the
    table cache off) and warm (the tables this row's first load cached), against the oracle."""
    from core.formats.table_cache import CACHE_ENV

    folder = os.environ.get(CACHE_ENV, "off")
    warm = float("inf")
    for _ in range(LOAD_RUNS):
        t_oracle = min(t_oracle, timed(oracle.load)[0])
        os.environ[CACHE_ENV] = "off"
        try:
            t_cold = min(t_cold, timed(lambda: load_tokenizer_files({row.file_name: data}))[0])
        finally:
            os.environ[CACHE_ENV] = folder
        warm = min(warm, timed(lambda: load_tokenizer_files({row.file_name: data}))[0])
    return (f"cold {t_cold:.2f} / {t_oracle:.2f} s ({t_cold / t_oracle:.1f}×), "
            f"warm {warm:.2f} s ({warm / t_oracle:.1f}×)")  # fmt: skip


def run_row(row: Row, corpora: dict[str, list[str]], tmp: Path) -> None:
    try:
        data = row.data()
    except Exception as err:  # noqa: BLE001  (a missing package or file: say so, go on)
        row.cells["loads"] = f"no file ({type(err).__name__}: {err})"
        return
    try:
        kind = identify_files({row.file_name: data}).kind
        t_ours, ours = timed(lambda: load_tokenizer_files({row.file_name: data}))
    except Exception as err:  # noqa: BLE001  (report it in the table, go on)
        row.cells["loads"] = f"**no**: {type(err).__name__}: {str(err)[:120]}"
        return
    row.cells["loads"] = f"yes, {FORMATS.get(kind, kind)} → {type(ours).__name__}"
    try:
        oracle = row.oracle(data, tmp)
        t_oracle, theirs = timed(oracle.load)
    except Exception as err:  # noqa: BLE001  (report it in the table, go on)
        row.cells["load"] = f"{t_ours:.2f} s vs oracle failed: {type(err).__name__}: {err}"
        return
    row.cells["load"] = load_cell(row, data, oracle, t_ours, t_oracle)
    print(f"  {row.key}: {row.cells['loads']}; load {row.cells['load']}", file=sys.stderr, flush=True)
    for corpus, docs in corpora.items():
        clear(ours)
        gc.collect()
        mine = their = 0.0
        size = bad = 0
        for i, doc in enumerate(docs):
            size += len(doc.encode("utf-8"))
            t = time.perf_counter()
            got = ours.encode(doc)
            mine += time.perf_counter() - t
            t = time.perf_counter()
            want = oracle.encode(theirs, doc)
            their += time.perf_counter() - t
            if got != want:
                bad += 1
                if len(row.notes) < 3:
                    row.notes.append(f"{corpus} doc {i} ({doc[:30]!r}…): encode {first_difference(got, want)}")
            elif ours.decode(want) != oracle.decode(theirs, want):
                bad += 1
                if len(row.notes) < 3:
                    row.notes.append(f"{corpus} doc {i} ({doc[:30]!r}…): decode differs")
        row.cells[f"bad {corpus}"] = f"{bad} / {len(docs)}"
        mb = size / 1e6
        row.cells[f"speed {corpus}"] = (
            f"{mb / mine:.2f} / {mb / their:.1f} ({their / mine:.2f}×)" if mine and their else "—"
        )
        print(f"  {row.key} {corpus}: {bad} mismatching of {len(docs)}, "
              f"{mb:.1f} MB in {mine:.1f} s (oracle {their:.1f} s)", file=sys.stderr, flush=True)  # fmt: skip


def table(rows: list[Row], corpora: list[str]) -> str:
    head = ["file", "loads (format → class)", f"load s, best of {LOAD_RUNS}: ours / oracle"]
    head += [f"mismatching docs, {c}" for c in corpora]
    head += [f"encode MB/s {c}: ours / oracle (ours ÷ oracle)" for c in corpora]
    keys = ["loads", "load"] + [f"bad {c}" for c in corpora] + [f"speed {c}" for c in corpora]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        lines.append("| " + " | ".join([row.label] + [row.cells.get(k, "—") for k in keys]) + " |")
    notes = [f"- {row.label}: {note}" for row in rows for note in row.notes]
    if notes:
        lines += ["", "First mismatches:", *notes]
    return "\n".join(lines)


def tiktoken_cache(tmp: Path) -> None:
    """tiktoken reads OpenAI's files from a cache folder: fill one from core/data (offline)."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    folder = tmp / "tiktoken-cache"
    folder.mkdir()
    for name in PRESETS:
        for file in preset_files(name):
            shipped = resources.files("core").joinpath("data", file.shipped).read_bytes()
            (folder / file.cache_name).write_bytes(gzip.decompress(shipped))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=None,
                        help="documents per corpus, at a fixed stride (default: all)")
    parser.add_argument("--corpus", nargs="+", default=[DEFAULT_CORPORA],
                        help="corpus files or globs; documents joined with <|endoftext|> "
                             "(default: ../shared/corpora/*.txt.gz next to the repo)")
    parser.add_argument("--only", default="", help="comma-separated row keys (llama3, v7, ...)")
    parser.add_argument("--json", action="store_true",
                        help="also the tokenizer.json files transformers makes from them")
    parser.add_argument("--load-runs", type=int, default=LOAD_RUNS,
                        help="interleaved load timings per row, best taken (default: 3)")
    args = parser.parse_args()  # fmt: skip
    globals()["LOAD_RUNS"] = max(1, args.load_runs)

    paths = sorted({Path(p) for pattern in args.corpus for p in (glob.glob(pattern) or [pattern])})
    missing = [p for p in paths if not p.is_file()]
    if missing or not paths:
        print(
            f"corpus not found: {', '.join(map(str, missing)) or args.corpus}. The shared corpora "
            f"live in {REPO.parent / 'shared' / 'corpora'} on our machines only; pass your own "
            "with --corpus FILE... (text files of documents joined by <|endoftext|>, .gz or not).",
            file=sys.stderr,
        )
        return 2
    corpora = {corpus_name(p): read_corpus(p, args.docs) for p in paths}
    sizes = ", ".join(f"{c}: {len(d)} docs, {sum(len(x.encode()) for x in d) / 1e6:.1f} MB"
                      for c, d in corpora.items())  # fmt: skip
    print(f"corpora: {sizes}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="real-models-") as name:
        tmp = Path(name)
        tiktoken_cache(tmp)
        # our table cache in a fresh folder: a row's first load is cold and fills it
        from core.formats.table_cache import CACHE_ENV

        os.environ[CACHE_ENV] = str(tmp / "table-cache")
        todo = rows(args.json, tmp)
        if args.only:
            wanted = set(args.only.split(","))
            todo = [r for r in todo if r.key in wanted]
        for row in todo:
            print(f"{row.key}…", file=sys.stderr, flush=True)
            run_row(row, corpora, tmp)
            gc.collect()
    print(table(todo, list(corpora)))
    print("\nload average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
