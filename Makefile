# Two commands for a fresh Debian/Ubuntu machine with python3:
#   make run    set everything up and start the playground on the built-in corpus
#   make test   set everything up (Python packages, Debian's chromium) and run every test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501
WORKERS ?= 2

.PHONY: run serve test lint test-data setup setup-dev compiler browser proxy node bench clean load pyodide-test static

$(PY):
	$(PYTHON) -m venv $(VENV) || { echo "python3 -m venv failed: install it with 'apt-get install python3-venv'"; exit 1; }
	$(PY) -m pip install -q --upgrade pip

# `make run` installs only what the app needs; `make test` adds the test tools (.[dev]).
$(VENV)/.installed-run: pyproject.toml setup.py $(wildcard tokplay_native/*.c) | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml setup.py $(wildcard tokplay_native/*.c) | $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(VENV)/.installed-run $@

setup: $(VENV)/.installed-run
setup-dev: $(VENV)/.installed-dev

# gcc and the Python headers build the optional compiled helpers (tokplay_native, setup.py);
# without them pip goes on and core runs pure Python. `make test` wants them (test_native_*).
compiler:
	@{ command -v gcc >/dev/null 2>&1 && $(PYTHON) -c "import os, sys, sysconfig; \
	  sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; } || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc python3-dev >/dev/null; }

# Debian's chromium drives the browser tests; Playwright cannot download its own browser here.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Debian's haproxy: the reverse proxy of `make serve` (config: deploy/haproxy.cfg).
proxy:
	@command -v haproxy >/dev/null 2>&1 || test -x /usr/sbin/haproxy || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }

# Node and npm: tests/test_pyodide.py runs core under Pyodide (npm's pyodide package) in Node.
node:
	@{ command -v node && command -v npm; } >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }

# WORKERS Streamlit processes behind HAProxy on PORT (sticky sessions, shared library).
# Shared: no local GGUF listing unless the operator sets TOKPLAY_LOCAL_MODELS=1 (deploy/serve.py).
serve: setup proxy
	$(PY) deploy/serve.py --workers $(WORKERS) --port $(PORT)

# Static site in dist/: the playground on stlite (Streamlit on Pyodide) in the browser, no server
# (deploy/static.py; npm fetches @stlite/browser once into .cache/stlite).
static: setup node
	$(PY) deploy/static.py --out dist

# One person on their own machine: the picker lists the GGUF models of Ollama and LM Studio
# (TOKPLAY_LOCAL_MODELS=1; `TOKPLAY_LOCAL_MODELS=0 make run` when others reach this server).
# deploy/warm_start.py is `streamlit run` that loads the presets and baselines once it is up;
# deploy/asgi.py is app.py as Streamlit's ASGI app, telling the browser where the server is.
run: setup
	TOKPLAY_LOCAL_MODELS=$${TOKPLAY_LOCAL_MODELS:-1} $(PY) deploy/warm_start.py run deploy/asgi.py --server.port $(PORT) --server.headless=true --browser.gatherUsageStats=false

# Then the exactness tests again on the pure-Python path (TOKPLAY_NATIVE=0: what Pyodide and a
# machine without a C compiler run), against the same references.
PURE_TESTS ?= tests/test_real_models.py tests/test_presets.py tests/test_tokenizer.py \
              tests/pipeline/test_fast_encode_sp.py tests/test_formats_gguf.py \
              tests/test_formats_hf_pipeline_tables.py tests/test_formats_hf_unigram_tables.py \
              tests/test_formats_gguf_bpe.py tests/test_formats_gguf_pipeline_tables.py
# The linter and the type checker first (config: pyproject.toml's [tool.ruff] and [tool.mypy]):
# ruff also reports a `noqa` that silences nothing, mypy a `type: ignore` that does.
lint: setup-dev
	$(PY) -m ruff check core training ui
	$(PY) -m mypy

test: lint compiler setup-dev browser proxy node test-data
	$(PY) -m pytest -n 2 --dist loadgroup
	TOKPLAY_NATIVE=0 $(PY) -m pytest -n 2 --dist loadgroup -q $(PURE_TESTS)

# llama.cpp's own tokenizer cases (models/ggml-vocab-*.gguf with .inp/.out) and src/llama-vocab.cpp,
# from the llama-cpp-python sdist on PyPI (it vendors llama.cpp), for tests/test_formats_gguf.py.
# Only those files are kept, in .cache/test-data/llama.cpp/ (gitignored); the stamp names the version.
LLAMA_CPP_PYTHON ?= 0.3.36
TEST_DATA := .cache/test-data
test-data: $(TEST_DATA)/llama.cpp/.version-$(LLAMA_CPP_PYTHON)

$(TEST_DATA)/llama.cpp/.version-$(LLAMA_CPP_PYTHON): | $(PY)
	mkdir -p $(TEST_DATA)
	$(PY) -m pip download -q --no-deps --no-binary :all: llama-cpp-python==$(LLAMA_CPP_PYTHON) -d $(TEST_DATA)
	rm -rf $(TEST_DATA)/llama.cpp && mkdir -p $(TEST_DATA)/llama.cpp
	tar -xzf $(TEST_DATA)/llama_cpp_python-$(LLAMA_CPP_PYTHON).tar.gz -C $(TEST_DATA)/llama.cpp --strip-components=3 \
	  --wildcards 'llama_cpp_python-$(LLAMA_CPP_PYTHON)/vendor/llama.cpp/models/ggml-vocab-*' \
	  'llama_cpp_python-$(LLAMA_CPP_PYTHON)/vendor/llama.cpp/src/llama-vocab.cpp'
	rm -f $(TEST_DATA)/llama_cpp_python-$(LLAMA_CPP_PYTHON).tar.gz
	touch $@

# Benchmarks print ratio tables against tiktoken / Hugging Face tokenizers (not part of `make test`),
# then bench_app.py the app's own table: team load in one process and through `make serve`,
# first visits beside a bare Streamlit page, typing latency, encode/decode ratios (issue 36).
bench: setup-dev browser proxy
	$(PY) benchmarks/bench_train.py
	$(PY) benchmarks/bench_encode.py
	$(PY) benchmarks/bench_tokenize_page.py
	$(PY) benchmarks/bench_ui_train.py
	$(PY) benchmarks/real_models.py --docs 200 --json
	$(PY) benchmarks/bench_app.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache

# Load test without browsers: sessions speak Streamlit's websocket protocol (closed loop, no think time);
# reruns/s, p50, p95 and errors for 1-20 sessions on Tokenize, Decode, Compare, with and without 2 trainings.
load: setup-dev
	$(PY) benchmarks/load_protocol.py

# core's tests under Pyodide through pyodide-build (dev extra, Python >= 3.12). Needs the internet:
# `pyodide venv` downloads Pyodide's cross-build environment. Run as: make PYTHON=python3.12 pyodide-test
pyodide-test: setup-dev
	@test -x $(VENV)/bin/pyodide || { echo "pyodide-build needs Python >= 3.12: rm -rf $(VENV) and run 'make PYTHON=python3.12 pyodide-test'"; exit 1; }
	$(VENV)/bin/pyodide venv .venv-pyodide
	.venv-pyodide/bin/python -m pip install -q regex pytest hypothesis
	.venv-pyodide/bin/python -m pytest -p no:cacheprovider -p no:xdist -o addopts="--doctest-modules" \
	  core tests/test_regex_compat.py
