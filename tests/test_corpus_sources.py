"""Corpora where they live (issue 38): several files, folders and globs, ``.gz``/``.zst``,
Parquet and ``hf://datasets/...``, each file its own documents.

The oracle is CS336's own recipe: train_bpe on one plain file holding the same documents
joined with the special token between them. The Hub is the local stand-in (tests/hub_stub.py)
talked to by the real ``huggingface_hub``; no test reaches the internet.
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from pathlib import Path

# subtle: huggingface_hub reads HF_HUB_OFFLINE once, when its constants are first imported; a
# test elsewhere that sets it before that (tests/test_cli.py has one) would leave it offline for
# good in this process, so they are imported now, online
import huggingface_hub.constants  # noqa: F401
import pytest

from core.train import corpus_sources
from core.train.builtin_corpus import builtin_corpus_documents
from core.train.corpus import DEFAULT_CHUNK_SIZE, find_chunk_boundaries
from core.train.corpus_readers import CorpusFiles, file_items, read_item
from core.train.corpus_sources import find_corpus_files
from core.train.count import _work_items, count_in_steps, count_pretokens
from core.errors import CorpusError, HubAccessError, HubError, HubOfflineError
from core.train import train_bpe
from tests.conftest import need_module
from tests.hub_stub import TOKEN, HubStub, Repo

SPECIAL = "<|endoftext|>"
VOCAB = 400
# real text (prose, code, non-ASCII; about 100 kB) in documents that end in a word, so that two
# of them run together ("...endsAbstract") unless each is counted on its own
DOCS = tuple(f"{doc.strip()} ends" for doc in builtin_corpus_documents()[:24])


def _joined_file(tmp_path: Path, docs, name="joined.txt") -> Path:
    """The CS336 layout: the documents in one file, the special token between them."""
    path = tmp_path / name
    path.write_text(SPECIAL.join(docs), encoding="utf-8")
    return path


def _write_parquet(path: Path, docs, *, column="text", row_group_size=5, **other):
    pa, pq = need_module("pyarrow"), need_module("pyarrow.parquet")
    pq.write_table(pa.table({"id": list(range(len(docs))), column: list(docs), **other}), path,
                   row_group_size=row_group_size)
    return path


def _zst(data: bytes) -> bytes:
    return need_module("zstandard").ZstdCompressor().compress(data)


def _one_line(err: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(err.value)
    assert "\n" not in message and len(message) < 400, message
    return message


# ─── several files, folders, globs: documents of their own ────────────────────────────────


def test_files_a_folder_and_a_glob_train_as_their_documents_joined_by_the_special_token(tmp_path):
    (tmp_path / "books" / "part2").mkdir(parents=True)
    (tmp_path / "web").mkdir()
    names = [tmp_path / "books" / "a.txt", tmp_path / "books" / "part2" / "b.txt",
             tmp_path / "web" / "c.txt", tmp_path / "web" / "d.txt", tmp_path / "e.txt"]
    for path, doc in zip(names, DOCS):
        path.write_text(doc, encoding="utf-8")
    (tmp_path / "books" / "notes.md").write_text("not read: not a corpus file")
    (tmp_path / "books" / ".hidden.txt").write_text("not read: hidden")
    files = find_corpus_files([tmp_path / "books", str(tmp_path / "web" / "*.txt"), tmp_path / "e.txt"])
    assert files.paths == tuple(map(str, names))
    expected = train_bpe(_joined_file(tmp_path, DOCS[:5]), VOCAB, [SPECIAL])
    assert train_bpe(files, VOCAB, [SPECIAL]) == expected
    assert train_bpe(files, VOCAB, [SPECIAL], num_workers=2) == expected


def test_no_pre_token_spans_two_files_even_without_special_tokens(tmp_path):
    (tmp_path / "a.txt").write_text("hello wor", encoding="utf-8")
    (tmp_path / "b.txt").write_text("ld again", encoding="utf-8")
    counts, stats = count_pretokens(find_corpus_files([tmp_path]))
    assert counts == count_pretokens(["hello wor", "ld again"])[0]  # "wor" and "ld", never "world"
    assert stats["bytes"] == 17 and stats["characters"] is None


def test_a_file_named_twice_is_read_once_and_globs_reach_any_depth(tmp_path):
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "x" / "y" / "deep.txt").write_text("deep")
    (tmp_path / "top.txt").write_text("top")
    found = find_corpus_files([tmp_path / "top.txt", str(tmp_path / "**" / "*.txt"), tmp_path])
    assert found.paths == (str(tmp_path / "top.txt"), str(tmp_path / "x" / "y" / "deep.txt"))


def test_one_plain_file_is_cut_exactly_as_before(tmp_path):
    """train_bpe(path) keeps its byte ranges: the same chunks, so the same speed and counts."""
    path = _joined_file(tmp_path, DOCS * 12)  # about 1.2 MB: several chunks
    items, sizes, is_file = _work_items(str(path), (SPECIAL,), "gpt2", "strict", None, 4)
    chunk = max(64 << 10, min(DEFAULT_CHUNK_SIZE, path.stat().st_size // 16 + 1))
    bounds = find_chunk_boundaries(path, special_tokens=[SPECIAL], chunk_size=chunk)
    assert items == [(str(path), s, e) for s, e in zip(bounds, bounds[1:])] and len(items) > 4
    assert sum(sizes) == path.stat().st_size and is_file


# ─── compressed text ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_compressed_text_trains_as_the_plain_file(tmp_path, suffix):
    plain = _joined_file(tmp_path, DOCS * 20)  # about 2 MB: the stream is cut more than once
    data = plain.read_bytes()
    packed = tmp_path / f"c.txt{suffix}"
    packed.write_bytes(gzip.compress(data) if suffix == ".gz" else _zst(data))
    assert count_pretokens(str(packed), [SPECIAL])[0] == count_pretokens(str(plain), [SPECIAL])[0]
    assert train_bpe(str(packed), 300, [SPECIAL]) == train_bpe(plain, 300, [SPECIAL])
    # progress: the compressed bytes, piece by piece (a Stop is taken between two pieces)
    steps = list(count_in_steps(CorpusFiles([packed]), [SPECIAL]))
    assert len(steps) > 1 and steps[-1] == (packed.stat().st_size, packed.stat().st_size)
    # memory: no piece holds much more than two chunks of text
    [item] = file_items(CorpusFiles([packed]), [SPECIAL])[0]
    assert max(len(piece.data) for piece in read_item(item, [SPECIAL])) <= 2 * DEFAULT_CHUNK_SIZE


def test_a_broken_gz_file_is_one_line(tmp_path):
    path = tmp_path / "c.txt.gz"
    path.write_bytes(gzip.compress(b"hello world " * 1000)[:-40])  # cut short
    with pytest.raises(CorpusError) as err:
        count_pretokens(str(path))
    assert _one_line(err).startswith(f"{path} is not a valid gzip file (")


def test_zst_without_zstandard_names_the_package(tmp_path, monkeypatch):
    path = tmp_path / "c.txt.zst"
    path.write_bytes(b"anything")
    monkeypatch.setitem(__import__("sys").modules, "zstandard", None)
    with pytest.raises(CorpusError) as err:
        count_pretokens(CorpusFiles([path]))
    assert _one_line(err) == ("reading .zst files needs the zstandard package: pip install zstandard "
                              "(or pip install 'tokenizer-playground[corpora]')")


def test_bad_utf8_in_compressed_text_names_the_offset_once_decompressed(tmp_path):
    path = tmp_path / "c.txt.gz"
    path.write_bytes(gzip.compress(b"plain text " * 10 + b"\xff more"))
    with pytest.raises(CorpusError) as err:
        count_pretokens(str(path))
    assert _one_line(err).startswith(f"{path} (decompressed) is not valid UTF-8: bad byte(s) "
                                     "ff 20 6d 6f at byte offset 110 ")
    assert count_pretokens(str(path), errors="replace")[0][" \ufffd"] == 1


# ─── Parquet ────────────────────────────────────────────────────────────────────────────


def test_parquet_rows_are_documents_in_row_groups(tmp_path):
    path = _write_parquet(tmp_path / "docs.parquet", DOCS, row_group_size=5)
    files = CorpusFiles([path])
    items, sizes = file_items(files)
    assert items == [(str(path), i, "text") for i in range(5)]  # 24 rows, 5 per row group
    assert train_bpe(files, VOCAB, [SPECIAL]) == train_bpe(_joined_file(tmp_path, DOCS), VOCAB, [SPECIAL])
    assert train_bpe(files, VOCAB, [SPECIAL], num_workers=2) == train_bpe(files, VOCAB, [SPECIAL])
    # without special tokens still a document per row: no pre-token spans two rows
    assert count_pretokens(files)[0] == count_pretokens(list(DOCS))[0] != count_pretokens(["".join(DOCS)])[0]
    assert count_pretokens(files)[1]["bytes"] == sum(sizes)


def test_parquet_nulls_and_other_columns_are_left_out(tmp_path):
    docs = ["first doc", None, "", "second doc"]
    path = _write_parquet(tmp_path / "d.parquet", docs, column="content", row_group_size=2)
    counts, _ = count_pretokens(CorpusFiles([path], text_column="content"))
    assert counts == Counter({"first": 1, "second": 1, " doc": 2})


def test_a_parquet_file_without_the_column_names_the_ones_it_has(tmp_path):
    path = _write_parquet(tmp_path / "d.parquet", ["a", "b"], column="content")
    with pytest.raises(CorpusError) as err:
        train_bpe(CorpusFiles([path]), 300)
    assert _one_line(err) == (f"{path} has no column 'text'; its columns: id, content. Name the one "
                              "with the text: text_column= (CLI: --text-column)")
    with pytest.raises(CorpusError) as err:
        train_bpe(CorpusFiles([path], text_column="id"), 300)
    assert _one_line(err) == (f"column 'id' of {path} holds int64, not text: name a text column "
                              "with text_column= (CLI: --text-column)")


def test_a_file_that_is_not_parquet_says_so(tmp_path):
    path = tmp_path / "d.parquet"
    path.write_text("just text")
    with pytest.raises(CorpusError) as err:
        count_pretokens(CorpusFiles([path]))
    assert _one_line(err).startswith(f"{path} is not a Parquet file we can read (")


# ─── refusals: one line each ────────────────────────────────────────────────────────────


def test_what_cannot_be_found_or_read_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "only.md").write_text("x")
    (tmp_path / "sub").mkdir()
    cases = {
        str(tmp_path / "nope.txt"): f"corpus file {str(tmp_path / 'nope.txt')!r} not found",
        str(tmp_path / "*.txt"): f"no file matches {str(tmp_path / '*.txt')!r}: check the pattern "
                                 "('**' for any depth)",
        str(tmp_path / "su*"): f"{str(tmp_path / 'su*')!r} matches only folders without corpus files "
                               "(.txt, .gz, .zst, .parquet)",
        str(tmp_path): f"folder {str(tmp_path)!r} has no corpus files (.txt, .gz, .zst, .parquet; "
                       "hidden ones aside): give the files themselves, or a folder that holds some",
    }
    for source, message in cases.items():
        with pytest.raises(CorpusError) as err:
            find_corpus_files([source])
        assert _one_line(err) == message


def test_a_file_without_read_permission_is_one_line(tmp_path, monkeypatch):
    path = tmp_path / "locked.txt"
    path.write_text("secret")

    def refuse(name, *args, **kwargs):  # as open() answers a user without read permission
        raise PermissionError(13, "Permission denied", str(name))

    monkeypatch.setattr(corpus_sources, "open", refuse, raising=False)
    with pytest.raises(CorpusError) as err:
        find_corpus_files([path])
    assert _one_line(err) == f"cannot read corpus file {str(path)!r} (permission denied): check its permissions"


def test_binary_data_among_the_files_names_the_file_and_the_offset(tmp_path):
    (tmp_path / "a.txt").write_text("good text " * 10)
    (tmp_path / "b.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(CorpusError) as err:
        count_pretokens(find_corpus_files([tmp_path]))
    assert _one_line(err).startswith(f"{tmp_path / 'b.txt'} is not valid UTF-8: bad byte(s) 89 50 4e 47 "
                                     "at byte offset 0")


def test_the_cs336_signature_still_means_one_file_or_texts(tmp_path):
    path = _joined_file(tmp_path, DOCS[:3])
    assert train_bpe(str(path), 300, [SPECIAL]) == train_bpe(path, 300, [SPECIAL])
    assert train_bpe([SPECIAL.join(DOCS[:3])], 300, [SPECIAL]) == train_bpe(str(path), 300, [SPECIAL])
    with pytest.raises(CorpusError, match="CorpusFiles takes a list of paths"):
        CorpusFiles(str(path))  # type: ignore[arg-type]


# ─── hf://datasets/... through the Hub stand-in ─────────────────────────────────────────

TEXTS_REPO = "stub-org/tiny-texts"
GATED_REPO = "stub-org/gated-texts"
_ENV = ("HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
        "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


@pytest.fixture(scope="module")
def parquet_bytes(tmp_path_factory) -> bytes:
    return _write_parquet(tmp_path_factory.mktemp("pq") / "d.parquet", DOCS[8:16], row_group_size=3).read_bytes()


@pytest.fixture(scope="module")
def stub(parquet_bytes) -> HubStub:
    texts = {f"train/{i}.txt": DOCS[i].encode() for i in range(3)}
    texts["train/3.txt.gz"] = gzip.compress(DOCS[3].encode())
    datasets = {
        TEXTS_REPO: Repo({**texts, "data/train-00000.parquet": parquet_bytes, "README.md": b"# tiny\n",
                          ".gitattributes": b"*.parquet filter=lfs\n"},
                         lfs=frozenset({"data/train-00000.parquet"})),  # served through the CDN redirect
        GATED_REPO: Repo({"a.txt": b"gated text"}, gated=True),
    }
    server = HubStub({}, datasets=datasets).start()
    yield server
    server.stop()


@pytest.fixture
def hub_env(stub, tmp_path, monkeypatch) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", stub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return tmp_path / "hf"


def test_hf_text_files_train_as_their_documents_then_offline_from_the_cache(stub, hub_env, tmp_path, monkeypatch):
    url = f"hf://datasets/{TEXTS_REPO}/train"
    seen = []
    files = find_corpus_files([url], on_progress=lambda *step: seen.append(step))
    folder = f"datasets--{TEXTS_REPO.replace('/', '--')}"  # in the Hugging Face cache
    assert [os.path.relpath(p, hub_env).split(os.sep)[1] for p in files.paths] == [folder] * 4
    assert [p.rsplit("/", 1)[-1] for p in files.paths] == ["0.txt", "1.txt", "2.txt", "3.txt.gz"]
    total = sum(len(data) for name, data in stub.datasets[TEXTS_REPO].files.items() if name.startswith("train/"))
    assert seen[-1] == ("downloading", total, total)
    expected = train_bpe(_joined_file(tmp_path, DOCS[:4]), VOCAB, [SPECIAL])
    assert train_bpe(files, VOCAB, [SPECIAL]) == expected
    # offline: not one request, the same files from the cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(stub.requests)
    offline = find_corpus_files([url])
    assert stub.requests[before:] == [] and offline.paths == files.paths
    assert train_bpe(offline, VOCAB, [SPECIAL]) == expected


def test_hf_parquet_by_glob_then_offline(stub, hub_env, tmp_path, monkeypatch):
    url = f"hf://datasets/{TEXTS_REPO}/data/*.parquet"
    first = len(stub.requests)
    files = find_corpus_files([url])
    assert [p.rsplit("/", 1)[-1] for p in files.paths] == ["train-00000.parquet"]
    expected = train_bpe(_joined_file(tmp_path, DOCS[8:16]), VOCAB, [SPECIAL])
    assert train_bpe(files, VOCAB, [SPECIAL]) == expected
    assert [p for _, p in stub.requests[first:] if "/resolve/" in p] == [
        f"/datasets/{TEXTS_REPO}/resolve/main/data/train-00000.parquet"]  # only what was named
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(stub.requests)
    assert train_bpe(find_corpus_files([url]), VOCAB, [SPECIAL]) == expected
    assert stub.requests[before:] == []


def test_hf_whole_repo_takes_its_corpus_files_and_a_revision(stub, hub_env):
    sha = stub.datasets[TEXTS_REPO].sha
    files = find_corpus_files([f"hf://datasets/{TEXTS_REPO}@{sha}"])
    assert [p.split(f"{sha}/", 1)[1] for p in files.paths] == [
        "data/train-00000.parquet", "train/0.txt", "train/1.txt", "train/2.txt", "train/3.txt.gz"]


def test_hf_with_the_hub_unreachable_the_cache_still_serves(hub_env, monkeypatch):
    own = HubStub({}, datasets={TEXTS_REPO: Repo({"a.txt": b"cached text here"})}).start()
    monkeypatch.setenv("HF_ENDPOINT", own.url)
    online = find_corpus_files([f"hf://datasets/{TEXTS_REPO}/a.txt"])
    own.stop()  # nothing listens there any more
    assert find_corpus_files([f"hf://datasets/{TEXTS_REPO}/a.txt"]) == online
    with pytest.raises(HubOfflineError) as err:
        find_corpus_files([f"hf://datasets/{TEXTS_REPO}/b.txt"])
    assert _one_line(err) == (f"offline ({own.url} cannot be reached) and hf://datasets/{TEXTS_REPO}/b.txt "
                              f"is not in the local Hugging Face cache ({hub_env / 'hub'}): fetch it once online")


def test_hf_refusals_are_one_line(stub, hub_env, monkeypatch):
    token = ("set HF_TOKEN to a token with access (huggingface.co/settings/tokens) or run "
             "`huggingface-cli login`")
    cases = [
        (f"hf://datasets/{TEXTS_REPO}/nope.txt", HubError,
         f"hf://datasets/{TEXTS_REPO}/nope.txt names no file of the dataset {TEXTS_REPO}; it has: "
         ".gitattributes, README.md, data/train-00000.parquet, train/0.txt, train/1.txt, train/2.txt, "
         "train/3.txt.gz"),
        ("hf://datasets/nobody/nothing/a.txt", HubAccessError,
         f"no dataset named nobody/nothing on {stub.url}: check the name (org/name, as on its Hub page); "
         f"if it is private, a token is needed: {token}"),
        (f"hf://datasets/{GATED_REPO}/a.txt", HubAccessError,
         f"{GATED_REPO} is a gated dataset: the Hub lets only accounts that accepted its terms download "
         f"it, so a token is needed: {token}"),
        (f"hf://datasets/{TEXTS_REPO}@v9/train", HubError,
         f"{TEXTS_REPO} has no revision 'v9': give a branch, tag or commit it has"),
        ("hf://openai-community/gpt2/vocab.json", HubError,
         "'hf://openai-community/gpt2/vocab.json' is not a Hub dataset: write hf://datasets/ORG/NAME/PATH "
         "(e.g. hf://datasets/roneneldan/TinyStories/TinyStoriesV2-GPT4-valid.txt)"),
    ]
    for url, kind, message in cases:
        with pytest.raises(kind) as err:
            find_corpus_files([url])
        assert _one_line(err) == message
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # with a token the gated dataset comes
    assert len(find_corpus_files([f"hf://datasets/{GATED_REPO}/a.txt"]).paths) == 1
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubOfflineError) as err:
        find_corpus_files([f"hf://datasets/{TEXTS_REPO}/train"])
    assert _one_line(err) == (f"offline (HF_HUB_OFFLINE is set) and hf://datasets/{TEXTS_REPO}/train is "
                              f"not in the local Hugging Face cache ({hub_env / 'hub'}): fetch it once online")


def test_the_cli_trains_on_hf_and_local_corpora_together(stub, hub_env, tmp_path, monkeypatch):
    import pickle

    from tests.test_cli import call

    (tmp_path / "local.txt").write_text(DOCS[20], encoding="utf-8")
    code, out, err = call(monkeypatch, "train", f"hf://datasets/{TEXTS_REPO}/data", tmp_path / "local.txt",
                          "--vocab-size", VOCAB, "--special-token", SPECIAL, "--out", tmp_path / "o")
    assert code == 0, err
    assert "downloading" in err and "counting" in err  # a bar each, on stderr
    merges = pickle.loads((tmp_path / "o" / "merges.pkl").read_bytes())
    assert merges == train_bpe(_joined_file(tmp_path, [*DOCS[8:16], DOCS[20]]), VOCAB, [SPECIAL])[1]
