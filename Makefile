# mcp-hooks: `make demo` shows it working, `make test` checks everything but the real agent
# hosts, `make e2e` runs those, `make bench` measures. `.ci/run` is `make test` then `make e2e`.
# Each target creates .venv and installs the package (with its dev tools) when needed.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# pytest workers of `make test` (pytest-xdist); every test has its own TMPDIR, HOME, ports
# and cache lock, so they are safe side by side. JOBS=0 runs them all in one process.
JOBS   ?= 2

.PHONY: demo test e2e lint typecheck pytest fuzz bench clean

$(STAMP): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: lint typecheck pytest java-test

# The package and the bundled hooks (hooks/) with ruff's complexity check too (C901, at 15, no
# exemptions; tests/test_shape.py counts it radon's way, nested functions in, never below ruff).
lint: $(STAMP)
	$(BIN)/ruff check mcp_hooks tests bench examples hooks
	$(BIN)/ruff check --extend-select C901 mcp_hooks hooks

# The package, then each bundled hook's scripts/ on its own: a hook's folder is its own import
# root (run.py imports its siblings by name; every hook has a run.py), so one mypy run per hook.
typecheck: $(STAMP)
	$(BIN)/mypy
	@for dir in hooks/*/scripts; do \
		set -- $$dir/*.py; [ -e "$$1" ] || continue; \
		MYPYPATH=$$dir $(BIN)/mypy --strict --no-error-summary "$$@" || exit 1; \
	done

# pytest exits 5 when it collected no test: say so and fail, never pass by accident.
# $(call run_pytest,TARGET,ARGS)
define run_pytest
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest $(2); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make $(1): pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc
endef

# Everything but the real agent hosts: offline once .venv and the test cache are filled.
pytest: $(STAMP)
	$(call run_pytest,test,-m "not e2e" -n $(JOBS))

# The AgentScope Java adapter (java/, docs/agentscope-java.md): `mvn verify` against
# agentscope-core 2.0.x and 1.0.x, whose agent tests talk to a real `mcp-hooks serve` from
# .venv; Maven's local repository is ~/.m2. Without mvn or java it is skipped, saying why,
# except in CI (CI=true), where that fails. A passing run prints nothing (no colour resets:
# MVN_OPTS_PLAIN, and any left are stripped).
JAVA_PROFILES := agentscope-2.0 agentscope-1.0
# Debian's Maven 3.8 writes colour resets (ESC[0m) even in batch mode; Jansi's noreset stops
# them (it must be in MAVEN_OPTS: read before Maven parses its own -D options).
MVN_OPTS_PLAIN := -Djansi.noreset=true
.PHONY: java-test
java-test: $(STAMP)
	@if [ ! -f java/pom.xml ]; then echo "java-test: skipped (no java/ in this tree)"; exit 0; fi; \
	if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then \
		if [ "$${CI:-}" = true ]; then \
			echo "make java-test: mvn and java are needed (CI=true, so not skipped):" \
				"apt-get install maven openjdk-17-jdk-headless" >&2; exit 1; \
		fi; \
		echo "java-test: skipped (mvn or java is not on PATH: apt-get install maven" \
			"openjdk-17-jdk-headless)"; exit 0; \
	fi; \
	for profile in $(JAVA_PROFILES); do \
		out=$$(cd java && MAVEN_OPTS="$${MAVEN_OPTS:-} $(MVN_OPTS_PLAIN)" mvn -q -B -P $$profile \
			-Dmcphooks.bin="$(CURDIR)/$(BIN)/mcp-hooks" verify 2>&1); rc=$$?; \
		printf '%s\n' "$$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^[[:space:]]*$$' || true; \
		if [ $$rc -ne 0 ]; then \
			echo "make java-test: mvn verify -P $$profile failed (exit $$rc)" >&2; exit $$rc; \
		fi; \
	done

# The real agent hosts (tests/e2e, docs/e2e.md): node >= 20 and npm, the npm registry and PyPI
# on the first run (installs are cached in $MCP_HOOKS_TEST_CACHE, ~/.cache/mcp-hooks-test).
e2e: $(STAMP)
	$(call run_pytest,e2e,-m e2e)

# The property tests of tests/spec/test_properties.py with a budget 20 times make test's (minutes);
# failing examples are kept in .pytest_cache/hypothesis and replayed first next time.
fuzz: $(STAMP)
	@PATH="$(CURDIR)/$(BIN):$$PATH" MCP_HOOKS_FUZZ=1 $(BIN)/pytest tests/spec/test_properties.py \
		--hypothesis-show-statistics

bench: $(STAMP)
	@for b in bench/bench_*.py; do \
		echo "== $$b"; PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python $$b || exit 1; \
	done
	@echo "figures written to bench/RESULTS.md"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache *.egg-info
