"""The Evaluate page in a real browser: two tokenizers on two texts give the table (its CSV
equal to core's numbers) and the vocab-size curves; a long uploaded text is evaluated in the
background and joins the table. Waits for content, never for time."""

from __future__ import annotations

import csv
import io
from urllib.parse import quote

import pytest

from core import load_preset
from core.explain.evaluate import evaluate, parallel_texts
from tests.browser.conftest import AppBrowser

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

TEXT = "Tokenizers turn text into numbers: the unbelievable 日本語 🧩"
GERMAN = parallel_texts()["de"][1]

_CURVES = """() => [...document.querySelectorAll('[data-chart="eva.chart.curve"]')]
    .map(c => ({lines: c.querySelectorAll('.tp-series[data-mode="lines"]').length,
                diamonds: c.querySelectorAll('.tp-series[data-mode="diamonds"] i').length,
                legend: [...c.querySelectorAll('.tp-key')].map(k => k.textContent)}))"""


def _table_csv(app: AppBrowser) -> list[dict[str, str]]:
    button = app.page.locator(".st-key-eva-csv button")  # type: ignore[attr-defined]
    with app.page.expect_download() as download:  # type: ignore[attr-defined]
        button.click()
    return list(csv.DictReader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))


def _expected(label: str, name: str, text: str) -> dict[str, str]:
    s = evaluate(load_preset(name), [text]).stats
    return {"tokenizer": label, "bytes": str(s.bytes), "chars": str(s.chars), "words": str(s.words),
            "tokens": str(s.tokens), "bytes / token": str(round(s.bytes_per_token, 3))}


def test_two_tokenizers_two_texts_show_the_table_and_the_curves(app: AppBrowser) -> None:
    app.goto(f"Evaluate?tok=gpt2&tok=cl100k_base&src=typed&src=lang:de&text={quote(TEXT)}")
    app.assert_healthy()
    app.page.wait_for_function(f"() => ({_CURVES})().some(c => c.lines >= 4)")  # type: ignore[attr-defined]
    curve = app.page.evaluate(_CURVES)[0]  # type: ignore[attr-defined]
    assert curve["lines"] == 4 and curve["diamonds"] == 4  # 2 tokenizers x 2 texts
    assert len(curve["legend"]) == 4  # one key per line (its diamond shares it)
    assert sum(name.startswith("GPT-2 (gpt2) ·") for name in curve["legend"]) == 2
    rows = _table_csv(app)
    got = [{k: r[k] for k in ("tokenizer", "bytes", "chars", "words", "tokens", "bytes / token")}
           for r in rows]
    assert got == [_expected("GPT-2 (gpt2)", "gpt2", TEXT),
                   _expected("GPT-4 (cl100k_base)", "cl100k_base", TEXT),
                   _expected("GPT-2 (gpt2)", "gpt2", GERMAN),
                   _expected("GPT-4 (cl100k_base)", "cl100k_base", GERMAN)]
    assert [r["text"] for r in rows][2] == "🌐 German (parallel set)"
    body = app.page.inner_text("body")  # type: ignore[attr-defined]
    assert "Most used" in body
    parity = app.page.locator('[data-chart="eva.chart.parity"] img')  # type: ignore[attr-defined]
    assert parity.get_attribute("alt") == "Tokens for the same text, relative to English"
    assert parity.evaluate("i => i.decode().then(() => i.naturalWidth)") > 0  # drawn
    # the link names the same view
    link = app.page.locator('[data-key="links-Evaluate"] .tp-copy-text').inner_text()  # type: ignore[attr-defined]
    assert "tok=GPT-2" in link and "src=typed&src=lang%3Ade" in link
    app.assert_healthy()


def test_a_long_upload_is_evaluated_in_the_background(app: AppBrowser, tmp_path) -> None:
    text = "A long upload, counted away from the page. 日本語 words\n" * 25_000  # > 1 MB
    path = tmp_path / "long.txt"
    path.write_text(text, encoding="utf-8")
    app.goto("Evaluate?tok=gpt2&src=lang:en")
    with app.rerun():
        app.page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(path))  # type: ignore[attr-defined]
    app.page.wait_for_function(  # type: ignore[attr-defined]
        "() => document.body.innerText.includes('Evaluating in the background') || "
        f"({_CURVES})().some(c => c.legend.some(n => n.includes('long.txt')))")
    app.page.wait_for_function(  # type: ignore[attr-defined]
        f"() => ({_CURVES})().some(c => c.legend.some(n => n.includes('long.txt')))", timeout=120_000)
    app.wait()
    rows = _table_csv(app)
    mine = [r for r in rows if "long.txt" in r["text"]]
    assert len(mine) == 1 and mine[0]["tokens"] == _expected("GPT-2 (gpt2)", "gpt2", text)["tokens"]
    app.assert_healthy()
