# Two commands do all the set-up: `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
DATA ?= ../shared/data/locomo/locomo10_dev.json
ALL_DATA ?= ../shared/data/locomo/locomo10_dev.json ../shared/data/realtalk/realtalk_dev.json ../shared/data/memdaily/memdaily_dev.json

.PHONY: demo test test-unit bench bench-all bench-graph bench-scale bench-serve bench-erasure serve install clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first and pinned: the local CPU build (an unpinned torch pulls a multi-GB CUDA build)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/palimpsest demo

STORE ?= demo-store
PORT ?= 8765

# Serve a store over HTTP (create a key first: $(BIN)/palimpsest --store $(STORE) keys create --tenant T).
serve: $(STAMP)
	$(BIN)/palimpsest --store $(STORE) serve --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing on purpose"; exit 1; fi; exit $$rc

test-unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit tests/contract

bench: $(STAMP)
	$(BIN)/python -m benchmarks.locomo --data $(DATA) --out bench/locomo_dev.json

# Every dev file, one fresh store each, then one summary (bench/summary.md): whole-file and leave-out figures.
bench-all: $(STAMP)
	@for f in $(ALL_DATA); do \
		$(BIN)/python -m benchmarks.locomo --data $$f --out bench/$$(basename $$f .json).json || exit 1; \
	done
	$(BIN)/python -m benchmarks.summary $(foreach f,$(ALL_DATA),bench/$(basename $(notdir $(f))).json) --out bench/summary.md

bench-graph: $(STAMP)
	$(BIN)/python -m benchmarks.graph --out bench/graph.json

bench-scale: $(STAMP)
	$(BIN)/python -m benchmarks.scale --out bench/scale.json

# Encryption's cost on ingest, search and replay, and the erasure scan with its positive controls (bench/erasure.json).
bench-erasure: $(STAMP)
	$(BIN)/python -m benchmarks.erasure --out bench/erasure.json

# The served store under a mixed open-loop load at 1, 8, 32 and 64 clients (bench/serve.json).
bench-serve: $(STAMP)
	$(BIN)/python -m benchmarks.serve --data $(DATA) --out bench/serve.json

clean:
	rm -rf $(VENV) demo-store bench .pytest_cache
