# areasync: every target installs what it needs first, so a fresh machine needs only `make`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CHROMIUM := /usr/bin/chromium
STRESS_NG := /usr/bin/stress-ng
JS_AGENT := examples/js-agent
# Root installs Debian packages directly; anyone else goes through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install browser js stress test test-browser test-slow test-under-load lint unit conformance through-workers bench serve soak fuzz clean \
	schema docs gaia2-soak

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,ray]'
	# OpenEnv's real client for tests/service/adapters/openenv/, without OpenEnv's server stack
	# (fastapi, gradio, fastmcp...): its client modules need only websockets and requests.
	$(PY) -m pip install --quiet --no-deps openenv-core==0.3.0
	touch $(STAMP)

# Today's OpenEnv client (`openenv`, which `openenv-core` was renamed to) for
# tests/service/adapters/openenv/: both ship the top-level module `openenv`, so it goes in a
# directory of its own, from which tests/service/adapters/openenv/today.py imports it under
# another name; without OpenEnv's server stack, as above.
OPENENV_TODAY := $(VENV)/openenv-0.10
$(OPENENV_TODAY)/.installed: $(STAMP)
	$(PY) -m pip install --quiet --no-deps --upgrade --target $(OPENENV_TODAY) openenv==0.10.0
	touch $@

install: $(STAMP) $(OPENENV_TODAY)/.installed

# Debian's chromium for the dashboard's browser tests (browser downloads are impossible here).
browser: $(CHROMIUM)
$(CHROMIUM):
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# Debian's stress-ng, which holds the cores busy for `make test-under-load`.
stress: $(STRESS_NG)
$(STRESS_NG):
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng

# The Node.js example agent's one dependency (ws), pinned by its package-lock.json.
js: $(JS_AGENT)/node_modules/.installed
$(JS_AGENT)/node_modules/.installed: $(wildcard $(JS_AGENT)/package*.json)
	if [ -f $(JS_AGENT)/package.json ] && command -v npm >/dev/null; then \
		cd $(JS_AGENT) && npm ci --silent --no-audit --no-fund && touch node_modules/.installed; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check areasync tests bench examples server.py
	$(VENV)/bin/ruff format --check areasync tests bench examples server.py
	$(VENV)/bin/mypy

# The suite on pytest-xdist workers (TEST_WORKERS, default 2: this machine's cores): a test on
# whichever worker is free, except the modules and packages that share a fixture, each whole on
# one worker (tests/conftest.py's scheduler). Tests marked `slow` (over 10 s each on a quiet
# 2-core machine: ARE's own CLI as the reference, servers killed and restarted, a Ray cluster)
# are left to `test-slow`, so that `make test` stays a few minutes; CI runs both.
TEST_WORKERS ?= 2
unit: $(STAMP) $(OPENENV_TODAY)/.installed browser js
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# The tests marked `browser`, alone: those that drive headless chromium (tests/service/dashboard, the
# Gaia2 report, the router's dashboard in tests/cluster, which is `slow`) or Node.js (the JS
# example agent, tests/client/test_js_agent.py). `make test` runs them too, in the same pytest
# run as the rest: its workers stay busy to the end, which a second run beside it would not make
# faster on two cores. For a change to the dashboard, the report or the JS agent.
test-browser: $(STAMP) browser js
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m 'browser and not slow and not soak'

test-slow: $(STAMP) browser js
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m 'slow and not soak'

# tests/service's protocol-level tests through `serve --workers 2` (a front and two session
# workers) instead of one process; a test that reaches into a session's in-process state skips.
# Every tests/service test (gaia2-cli's adapter's included; not the dashboard's, MCP's, or
# OpenEnv's but test_openenv.py) and `serve`'s own that runs through a service, through a front
# with two session workers instead (`serving`, `adapter`); those that reach into this process's
# state skip saying why (-rs lists them), those of what a front lacks are strict xfails.
through-workers: $(STAMP)
	AREASYNC_TEST_WORKERS=2 $(PY) -m pytest -q -rs -n $(TEST_WORKERS) --dist loadgroup \
		tests/service --ignore=tests/service/dashboard --ignore=tests/service/adapters/mcp \
		--ignore-glob='tests/service/adapters/openenv/test_openenv_*.py' \
		tests/cli/test_cli_serve.py tests/cli/test_cli_signals.py

conformance: $(STAMP)
	$(PY) -m pytest -q -m '' tests/conformance

# Lint beside the suite: mypy's first run on a fresh clone takes a core for a while the suite's
# workers spend waiting on their servers and subprocesses. Either failing fails the target.
test: $(STAMP) browser js
	$(MAKE) --no-print-directory -j2 lint unit

# The whole suite, `slow` tests included, while LOAD_CPUS (default 2: every core here) busy
# processes compete for the cores, as on a shared CI machine: a test whose outcome depends on the
# machine's speed fails here. The load ends with the run whatever happens: the shell's trap on
# exit, and the kernel's parent-death signal if the shell itself is killed.
LOAD_CPUS ?= 2
test-under-load: $(STAMP) $(OPENENV_TODAY)/.installed browser js stress
	setpriv --pdeathsig KILL $(STRESS_NG) --cpu $(LOAD_CPUS) --quiet & load=$$!; \
	trap 'kill $$load 2>/dev/null' EXIT INT TERM; \
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m 'not soak'

bench: $(STAMP) browser
	$(PY) bench/loop.py
	$(PY) bench/bridge.py
	$(PY) bench/protocol.py
	$(PY) bench/service.py
	$(PY) bench/imports.py
	$(PY) bench/floods.py
	$(PY) bench/dashboard.py
	$(PY) bench/startup.py

serve: $(STAMP)
	$(PY) server.py

schema: $(STAMP)
	$(VENV)/bin/areasync schema > areasync/protocol/schema.json

# docs/reference/protocol.md and cli.md, from the schema and the `areasync` parser (and the bench
# commands' own --help); tests/test_reference.py fails while they are stale.
docs: $(STAMP)
	$(PY) -m areasync.reference

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# Long fuzzing over a live socket: FUZZ_EXAMPLES hypothesis examples (default 1000).
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-1000} $(PY) -m pytest -q -m soak \
		tests/hardening/test_fuzz.py --hypothesis-show-statistics

# Soak: SOAK_SECONDS (default 600) of 100 oracle-agent sessions + churn, JSON report;
# then reconnect storms for STORM_SECONDS (default 120); then FAULT_RUNS (default 10) oracle
# runs and as many reconnect storms, each with FAULT_KILLS (default 5) SIGKILLs of a durable
# server (FAULT_SEED replays one). See docs/topics/testing.md and docs/topics/durability.md.
soak: $(STAMP)
	$(PY) bench/soak.py --seconds $${SOAK_SECONDS:-600}
	STORM_SECONDS=$${STORM_SECONDS:-120} $(PY) -m pytest -q -m soak \
		tests/hardening/test_reconnect_storm.py
	FAULT_RUNS=$${FAULT_RUNS:-10} FAULT_KILLS=$${FAULT_KILLS:-5} $(PY) -m pytest -q -m soak \
		tests/service/durability/test_durable_faults.py
	$(PY) -m pytest -q -m soak tests/conformance

# Gaia2 parity with ARE's own are-benchmark on the scenarios it idles in real time (~30 min).
gaia2-soak: $(STAMP)
	$(PY) -m pytest -q -m soak tests/gaia2
