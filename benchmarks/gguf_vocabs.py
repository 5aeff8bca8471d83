"""Every vocab llama.cpp tests with: ours against Hugging Face ``tokenizers``, one row per file.

    .venv/bin/python benchmarks/gguf_vocabs.py              # 100 documents per corpus
    .venv/bin/python benchmarks/gguf_vocabs.py --docs 300 --only deepseek-llm,phi-3

The files are llama.cpp's ``models/ggml-vocab-*.gguf`` (``make test-data``), the vocabs of
Llama 2/3, Phi-3, Qwen 2/3.5, Gemma 4, DeepSeek, Falcon, StarCoder, Command-R, BERT, T5 and
others; tests/test_formats_gguf.py checks ours ID for ID against llama.cpp's own cases for
each. This script measures speed against the model's own library in one process:

- the oracle is ``tokenizers`` on the tokenizer transformers' GGUF converter makes from the
  same file (fed from our GGUF reader, so no torch is needed). Where the converter's
  pre-tokenizer is not the model's (its byte-level vocabs get GPT-2's regex; DeepSeek's,
  Falcon's, StarCoder's are a Sequence of Splits), the oracle gets the model's: ours, written
  as tokenizer.json (``Sequence`` / ``Split`` / ``ByteLevel``), which is how those models'
  own tokenizer.json files spell it;
- mismatching documents: IDs (``add_special_tokens=False``) that differ from the oracle's. Not
  0 means the oracle is not that model (the converter's T5 renames, ...): llama.cpp's cases
  are the reference there, and the row's ratios compare different tokenizers;
- load: ours cold (the table cache off) against ``Tokenizer.from_str``; encode: every document
  of each corpus, ours with a cold cache, alternating document by document with the oracle;
- mixed scripts and first encode, as benchmarks/real_models.py measures them: mismatching
  strings of the generated mixed-script set (benchmarks/mixed_text.py), seconds for its
  3,000 short strings one call at a time and for its 50 KB document, and a cold load's first
  encode, alone and with the load (``--docs 0`` measures these alone).

Goals (issue 25): load at most 1.5x cold, encode at most 2x; (issue 36) the mixed-script
encodes and load + first encode at most 1.5x.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from mixed_text import first_text  # noqa: E402
from real_model_files import GGUF_DIR, Oracle, Row  # noqa: E402
from real_models import (  # noqa: E402
    DEFAULT_CORPORA,
    MIXED_DOCUMENT,
    MIXED_TEXTS,
    clear,
    corpus_name,
    first_cell,
    mixed_cells,
    read_corpus,
    timed,
)

from core.formats import load_tokenizer_files  # noqa: E402
from core.formats.gguf import read_gguf_metadata  # noqa: E402
from core.formats.table_cache import CACHE_ENV  # noqa: E402

_BEHAVIOR = {"isolated": "Isolated", "removed": "Removed", "merged_with_previous":
             "MergedWithPrevious", "merged_with_next": "MergedWithNext", "contiguous": "Contiguous"}  # fmt: skip


def pre_tokenizer_json(step: Any) -> dict[str, Any] | None:
    """Our pre-tokenizer as tokenizer.json spells it (the kinds GGUF byte-level vocabs use),
    or None for another kind."""
    kind = type(step).__name__
    if kind == "Sequence":
        steps = [pre_tokenizer_json(s) for s in step.pre_tokenizers]
        return None if None in steps else {"type": "Sequence", "pretokenizers": steps}
    if kind == "Split":
        key = "Regex" if step.pattern.is_regex else "String"
        return {"type": "Split", "pattern": {key: step.pattern.source},
                "behavior": _BEHAVIOR[step.behavior], "invert": step.invert}  # fmt: skip
    if kind == "ByteLevel":
        return {"type": "ByteLevel", "add_prefix_space": step.add_prefix_space,
                "trim_offsets": True, "use_regex": step.use_regex}  # fmt: skip
    return None


def oracle_json(data: bytes, ours: Any) -> str:
    """The converter's tokenizer.json for the file, with our pre-tokenizer where the model's
    own is a Sequence of Splits (see the module docstring)."""
    import importlib

    mapping = importlib.import_module("transformers.integrations.gguf.gguf_tokenizer_mapping")
    fields = read_gguf_metadata(data).fields
    found = {name: fields[f"tokenizer.{key}"]
             for key, name in mapping.GGUF_TOKENIZER_MAPPING["tokenizer"].items()
             if f"tokenizer.{key}" in fields}  # fmt: skip
    tok, _ = mapping.convert_gguf_tokenizer(fields.get("general.architecture"), found)
    doc = json.loads(tok.to_str())
    mine = pre_tokenizer_json(getattr(ours, "pre_tokenizer", None))
    if mine is not None and getattr(ours, "normalizer", None) is None:
        doc["pre_tokenizer"], doc["normalizer"] = mine, None
    return json.dumps(doc)


def row(path: Path, corpora: dict[str, list[str]]) -> str:
    import tokenizers

    data, name = path.read_bytes(), path.name
    os.environ[CACHE_ENV] = "off"
    t_ours, ours = timed(lambda: load_tokenizer_files({name: data}))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = oracle_json(data, ours)
    except Exception as err:  # noqa: BLE001  (the converter does not take every vocab)
        return f"| `{name}` | no oracle ({type(err).__name__}) | ours {t_ours:.3f} s | | |"
    t_theirs, theirs = timed(lambda: tokenizers.Tokenizer.from_str(text))
    for _ in range(2):  # (best of three loads each, interleaved)
        t_theirs = min(t_theirs, timed(lambda: tokenizers.Tokenizer.from_str(text))[0])
        t_ours = min(t_ours, timed(lambda: load_tokenizer_files({name: data}))[0])
    cells = [f"`{name}`", f"{t_ours:.3f} / {t_theirs:.3f} s ({t_ours / t_theirs:.1f}×)"]
    mixed = Row(name, name, name, lambda: data, lambda *_: oracle)
    oracle = Oracle(lambda: tokenizers.Tokenizer.from_str(text),
                    lambda hf, s: hf.encode(s, add_special_tokens=False).ids,
                    lambda hf, ids: hf.decode(ids, skip_special_tokens=False))  # fmt: skip
    cells.append(first_cell(mixed, data, oracle, first_text()))
    mixed_cells(mixed, ours, oracle, theirs, MIXED_TEXTS, MIXED_DOCUMENT)
    cells += [mixed.cells["bad mixed"], mixed.cells["short mixed"], mixed.cells["50 KB mix"]]
    for note in mixed.notes:
        print(f"  {name}: {note}", file=sys.stderr, flush=True)
    bad = total = 0
    for docs in corpora.values():
        clear(ours)
        mine = their = 0.0
        for doc in docs:
            start = time.perf_counter()
            got = ours.encode(doc)
            mine += time.perf_counter() - start
            start = time.perf_counter()
            want = theirs.encode(doc, add_special_tokens=False).ids
            their += time.perf_counter() - start
            bad += got != want
            total += 1
        if docs:
            cells.append(f"{mine:.2f} / {their:.2f} s ({mine / their:.1f}×)")
    cells.insert(1, f"{bad} / {total}")
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100, help="documents per corpus")
    parser.add_argument("--corpus", nargs="+", default=[DEFAULT_CORPORA],
                        help="corpus files or globs (default: ../shared/corpora/*.txt.gz)")
    parser.add_argument("--only", help="comma-separated vocab names (deepseek-llm, phi-3, ...)")
    args = parser.parse_args()
    paths = sorted({Path(p) for pattern in args.corpus for p in glob.glob(pattern)})
    files = sorted(GGUF_DIR.glob("ggml-vocab-*.gguf"))
    if args.only:
        wanted = {f"ggml-vocab-{n}.gguf" for n in args.only.split(",")}
        files = [f for f in files if f.name in wanted]
    if not paths or not files:
        print("no corpus or no vocab: pass --corpus FILE..., run `make test-data`", file=sys.stderr)
        return 2
    corpora = {corpus_name(p): read_corpus(p, args.docs) for p in paths}
    head = ["file", "mismatching docs", "load cold: ours / oracle"]
    head += ["first encode (cold), alone and after the load", "mismatching mixed-script strings",
             "3,000 mixed short strings, per call", "50 KB mixed document"]  # fmt: skip
    head += [f"encode {c}: ours / oracle" for c, docs in corpora.items() if docs]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for path in files:
        print(row(path, corpora), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
