# Every target sets up its own virtual environment first, so each works on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := demo-out

.PHONY: setup demo test check bench soak clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Ingest the bundled example transcript offline into a fresh folder, then show what came out.
demo: $(STAMP)
	rm -rf $(DEMO)
	$(BIN)/engram-md --memory-dir $(DEMO)/memory --state-dir $(DEMO)/state run < examples/demo.jsonl
	$(BIN)/engram-md --memory-dir $(DEMO)/memory --state-dir $(DEMO)/state status
	@echo; echo "Fact files written under $(DEMO)/memory/facts:"; find $(DEMO)/memory/facts -name '*.md' | sort
	@echo; $(BIN)/engram-md --memory-dir $(DEMO)/memory --state-dir $(DEMO)/state recall "which package manager should I use?"

test: $(STAMP)
	$(BIN)/pytest

check: $(STAMP)
	$(BIN)/ruff check engram_md tests bench
	$(BIN)/ruff format --check engram_md tests bench
	$(BIN)/mypy

# The secret-detector comparison needs the libraries it compares against (the bench extra).
bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench.run

soak: $(STAMP)
	$(BIN)/python -m bench.soak

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .mypy_cache .ruff_cache
