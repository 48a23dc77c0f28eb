# mcp-hooks: `make demo` shows it working, `make test` checks everything, `make bench` measures.
# Each target creates .venv and installs the package (with its dev tools) when needed.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck pytest fuzz bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check mcp_hooks tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy

# pytest exits 5 when it collected no test: say so and fail, never pass by accident.
pytest: $(STAMP)
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

# The property tests of tests/test_properties.py with a budget 20 times make test's (minutes);
# failing examples are kept in .pytest_cache/hypothesis and replayed first next time.
fuzz: $(STAMP)
	@PATH="$(CURDIR)/$(BIN):$$PATH" MCP_HOOKS_FUZZ=1 $(BIN)/pytest tests/test_properties.py \
		--hypothesis-show-statistics

bench: $(STAMP)
	@for b in bench/bench_*.py; do \
		echo "== $$b"; PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python $$b || exit 1; \
	done
	@echo "figures written to bench/RESULTS.md"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache *.egg-info
