"""Server time of the Tokenize page's Chat mode on a 20-message conversation (target: under
150 ms), and of its core part alone (render, tokenize, find the messages, draw the chips).

Runs the real page script with Streamlit's AppTest (no browser): one warm-up run per
tokenizer, then each timed run edits one message to a *new* text, so no cached result is
reused. Also times ``core.explain.chat_details.chat_details`` + ``ui.chat_view.chat_chips_html``
directly. Prints median / max milliseconds of wall time, and the median CPU time of the
process (on a shared machine, wall time includes waiting for a core; CPU time does not).

    .venv/bin/python benchmarks/bench_chat_page.py [--runs 5] [--messages 20] 2>/dev/null
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from streamlit import logger as st_logger  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from core.chat import ChatTemplate, chat_template_of  # noqa: E402
from core.explain.chat_details import chat_details  # noqa: E402
from core.formats.presets import load_preset  # noqa: E402
from ui.chat_view import chat_chips_html, conversation_text, messages_of  # noqa: E402
from ui.site import page  # noqa: E402
from tests.stats import stats

TOKENIZE = page("Tokenize").script
#: Llama 3's released template (core renders any template; this one trims every message).
LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)


def conversation(n: int, salt: int) -> list[list[str]]:
    chat = [["system", "You are a helpful assistant. Answer briefly, in the user's language."]]
    for i in range(1, n):
        role = "user" if i % 2 else "assistant"
        chat.append([role, f"Message {i} ({salt}): how many tokens does a sentence take? "
                           "Ça dépend de la langue — 日本語の文は多くのトークンになる 🧩. "
                           f"Code too: def f(x): return x ** {i}\n"])
    return chat


def time_core(tok: object, template: ChatTemplate, n: int, runs: int) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for k in range(runs):
        messages = messages_of(conversation(n, 1000 + k))
        t0, c0 = time.perf_counter(), time.process_time()
        details = chat_details(tok, template, messages, add_generation_prompt=True)
        chat_chips_html(details, show_ids=True, gpt2_view=False)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return wall, cpu


def time_page(preset: str, n: int, runs: int) -> tuple[list[float], list[float], str]:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.run()
    at.switch_page(TOKENIZE)
    at.query_params.update({"tok": preset, "mode": "chat",
                            "chat": conversation_text(conversation(n, 0))})
    at.run()  # warm-up: loads the preset, compiles the template
    wall, cpu = [], []
    for k in range(runs):
        at.text_area(key=f"_w.tok.chat.text.{n - 1}").input(f"A new last message, take {k}: 日本語")
        t0, c0 = time.perf_counter(), time.process_time()
        at.run()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        if at.exception:
            raise SystemExit(at.exception[0].value)
    return wall, cpu, next(m.value for m in stats(at) if m.label == "Tokens")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=20)
    args = parser.parse_args()
    st_logger.set_log_level("error")

    print(f"Chat mode, {args.messages} messages, {args.runs} runs each "
          "(wall median / max ms, CPU median ms)")
    for preset in ("cl100k_base", "o200k_base"):
        tok = load_preset(preset)
        for name, template in (("built-in ChatML", chat_template_of(tok)),
                               ("Llama 3 template", ChatTemplate.single(
                                   LLAMA3, source="bench",
                                   special_tokens={"bos_token": "<|endoftext|>"}))):
            wall, cpu = time_core(tok, template, args.messages, args.runs)
            print(f"core  {preset:<12} {name:<17} {statistics.median(wall):7.1f} / "
                  f"{max(wall):7.1f}   cpu {statistics.median(cpu):7.1f}")
        wall, cpu, tokens = time_page(preset, args.messages, args.runs)
        print(f"page  {preset:<12} {'built-in ChatML':<17} {statistics.median(wall):7.1f} / "
              f"{max(wall):7.1f}   cpu {statistics.median(cpu):7.1f}   ({tokens} tokens)")


if __name__ == "__main__":
    main()
