# Two commands do all the set-up: `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Installed: the package and what it needs to run (STAMP: make demo, make serve), then the test, benchmark, docs and
# integration extras too (DEV_STAMP: make test, the benchmarks, the docs).
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export NO_MKDOCS_2_WARNING := 1
# Python writes each module's bytecode on first import (its default), even where the environment says not to:
# without it every process (each Ray worker, each CLI call) compiles the project's ~200 modules from source again,
# about 0.4 s of CPU each time a shard starts.
unexport PYTHONDONTWRITEBYTECODE
DATA ?= ../shared/data/locomo/locomo10_dev.json
ALL_DATA ?= ../shared/data/locomo/locomo10_dev.json ../shared/data/realtalk/realtalk_dev.json ../shared/data/memdaily/memdaily_dev.json

.PHONY: demo test test-unit bench bench-all bench-report bench-graph bench-scale bench-history bench-serve bench-overload bench-cpu bench-writes bench-chaos bench-fuzz bench-multinode bench-erasure bench-feedback bench-truth serve install browser docs docs-serve clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first and pinned: the local CPU build (an unpinned torch pulls a multi-GB CUDA build). --no-compile
	# everywhere: pip would compile every module of every package (about 45 s here, most of it never imported);
	# Python compiles what is imported on its first import instead, and keeps it (PYTHONDONTWRITEBYTECODE above).
	$(BIN)/pip install --quiet --no-compile torch==2.13.0
	$(BIN)/pip install --quiet --no-compile -e .
	# jieba's sources warn when compiled (invalid escape sequences, shown from Python 3.12): compiled here, as pip
	# would have, so that a first import prints nothing of the library's.
	$(BIN)/python -m compileall -q "$$($(BIN)/python -c 'import importlib.util as u; print(*u.find_spec("jieba").submodule_search_locations)')" >/dev/null 2>&1 || true
	touch $(STAMP)

$(DEV_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet --no-compile -e '.[test,bench,docs,langgraph,agents]'
	$(MAKE) --no-print-directory browser
	touch $(DEV_STAMP)

install: $(DEV_STAMP)

# The inspector's browser tests drive Debian's Chromium through Playwright (no browser download: the Playwright CDN
# is not reachable); Noto CJK renders the Chinese text. Installed with apt when missing and when apt is usable.
BROWSER_PKGS := chromium fonts-noto-cjk
browser:
	@if command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -q "Noto Sans CJK"; then \
		echo "chromium and Noto CJK fonts present"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		apt-get install -y -q $(BROWSER_PKGS) >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q $(BROWSER_PKGS) >/dev/null; } \
		|| echo "apt-get could not install $(BROWSER_PKGS): the browser tests will be skipped"; \
	else \
		echo "chromium missing and apt-get unusable here (not root?): install $(BROWSER_PKGS) for the browser tests (tests/integration/test_inspector_ui.py), or set PALIMPSEST_CHROMIUM"; \
	fi

demo: $(STAMP)
	$(BIN)/palimpsest demo

STORE ?= demo-store
PORT ?= 8765

# Serve a store over HTTP (create a key first: $(BIN)/palimpsest --store $(STORE) keys create --tenant T).
serve: $(STAMP)
	$(BIN)/palimpsest --store $(STORE) serve --port $(PORT)

# The documentation site (MkDocs + Material) from docs/, built offline into site/ in strict mode; the CLI and
# event-kind reference pages are generated first from the parsers and the event registry.
docs: $(DEV_STAMP)
	$(BIN)/python docs/gen_reference.py
	$(BIN)/mkdocs build --strict --site-dir site

docs-serve: docs
	$(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:8000

# The suite runs in TEST_WORKERS pytest-xdist processes, a test module per process at a time (its module fixtures
# are set up once; tests/xdist_schedule.py): while one waits (Ray starting, a server, a subprocess) the other
# computes. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: $(DEV_STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing on purpose"; exit 1; fi; exit $$rc

test-unit: $(DEV_STAMP)
	$(BIN)/python -m pytest -q tests/unit tests/contract

bench: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.locomo --data $(DATA) --speed-runs 3 --out bench/locomo_dev.json

# Every dev file, one fresh store each, then one summary (bench/summary.md): whole-file and leave-out figures.
bench-all: $(DEV_STAMP)
	@for f in $(ALL_DATA); do \
		$(BIN)/python -m benchmarks.locomo --data $$f --speed-runs 3 --out bench/$$(basename $$f .json).json || exit 1; \
	done
	$(BIN)/python -m benchmarks.summary $(foreach f,$(ALL_DATA),bench/$(basename $(notdir $(f))).json) --out bench/summary.md

# The docs' benchmark page (docs/benchmarks/results.md and its charts) from whichever of bench/locomo_dev.json,
# bench/serve.json, bench/multinode.json, ... exist.
bench-report: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.report

bench-graph: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.graph --out bench/graph.json

bench-scale: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.scale --out bench/scale.json

# One user's history growing to 6,000 messages, one per ingest: ingest, search and context cost at each length.
bench-history: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.history_scale --out bench/history_scale.json

# Encryption's cost on ingest, search and replay, and the erasure scan with its positive controls (bench/erasure.json).
bench-erasure: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.erasure --out bench/erasure.json

# The served store under a mixed open-loop load at 1, 8, 32 and 64 clients (bench/serve.json).
bench-serve: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.serve --data $(DATA) --out bench/serve.json

# The served store past its capacity: the capacity found by a ramp, goodput and refusals at 2x and 4x, the
# search-only capacity, a modest tenant beside a flooding one (bench/serve_overload.json).
bench-overload: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.serve --data $(DATA) --overload --out bench/serve_overload.json

# Where a served store's CPU goes: every process's CPU idle, then per answered request of each kind (bench/serve_cpu.json).
bench-cpu: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.serve --data $(DATA) --cpu --out bench/serve_cpu.json

# 16 concurrent writers over HTTP, concurrent ingests merged and one by one (bench/serve_writes.json).
bench-writes: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.serve_writes --out bench/serve_writes.json

# kill -9 cycles (shards, directory, Ray workers, the driver) during ingest; 0 lost, 0 duplicated (see README)
bench-chaos: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.chaos --out bench/chaos.json

bench-fuzz: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.fuzz --examples 500 --out bench/fuzz.json

# ingest throughput on local Ray clusters of 1, 2 and 3 one-CPU nodes
bench-multinode: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.multinode --out bench/multinode.json

# The learning loop on every dev file (bench/feedback_<file>.json; each ingested store kept in bench/ingested-<file>
# and reused by the next run), then the stale-facts protocol in English and Chinese (bench/feedback_stale.json).
bench-feedback: $(DEV_STAMP)
	@for f in $(ALL_DATA); do \
		n=$$(basename $$f .json); \
		$(BIN)/python -m benchmarks.feedback --data $$f --out bench/feedback_$$n.json --ingested bench/ingested-$$n || exit 1; \
	done
	$(BIN)/python -m benchmarks.feedback_stale --out bench/feedback_stale.json

# Memory truth (EN+ZH): current facts first, superseded ones out of the context, constraints in a 300-token context
bench-truth: $(DEV_STAMP)
	$(BIN)/python -m benchmarks.truth --out bench/truth.json

clean:
	rm -rf $(VENV) demo-store bench .pytest_cache
