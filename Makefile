# Two commands a user needs (see README):  make serve   and   make test
# TORCH_SPEC picks the torch to install, TORCH_INDEX_URL where from (tools/install_torch.py chooses for the machine:
# the CPU build without an NVIDIA driver); CI sets TORCH_SPEC=torch==2.13.0 (the CPU wheel on its disk).
PYTHON ?= python3
# One environment per Python: make test PYTHON=python3.13 sets up and uses .venv-python3.13 beside .venv
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(notdir $(PYTHON)))
TORCH_SPEC ?= torch>=2.3
TORCH_INDEX_URL ?=
HOST ?= 127.0.0.1
PORT ?= 8000
BIN := $(VENV)/bin
STAMP := $(VENV)/.pitfalls-installed
export NO_MKDOCS_2_WARNING ?= 1
SHELL := /bin/bash
export PYTHONUNBUFFERED = 1
# torch's profiler (Kineto) prints a USDT line at every start and stop of a profile, which reads as an alarm; its
# level 6 is above every level it prints (a profiler that fails raises in Python all the same)
export KINETO_LOG_LEVEL ?= 6

.PHONY: setup serve build record record-release test test-fast bench translations mutation browser-deps fonts clean clean-cache

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@# the torch build this machine can use (CPU without an NVIDIA driver), said in one line; NumPy 1.x beside torch < 2.4
	@TORCH_SPEC="$(TORCH_SPEC)" TORCH_INDEX_URL="$(TORCH_INDEX_URL)" $(BIN)/python tools/install_torch.py
	@# setuptools warns of every editable install that a folder named like the package could shadow it: here that
	@# folder is the package itself
	PYTHONWARNINGS="ignore:Editable installation:UserWarning" $(BIN)/python -m pip install --quiet -e ".[docs,test]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)

## Build the whole site (every experiment; cached per machine) and serve it at http://$(HOST):$(PORT),
## rebuilding and reloading the browser when a page, experiment, renderer or recipe changes
serve: $(STAMP) fonts
	@$(BIN)/python snippets/lab/serve.py --addr $(HOST):$(PORT)

## Static build into site/ (FROZEN=1: from the recorded machines in results/ alone, running nothing)
build: $(STAMP) fonts
	$(BIN)/mkdocs build --strict

## Record this machine's results into results/$(MACHINE)/: what is missing or stale is measured, the rest kept
## (REFRESH=1: measure everything; REPLACE=1: overwrite a recording made on another machine; ALLOW_DIRTY=1:
## record from uncommitted changes, their digest in the manifest)
record: $(STAMP) fonts
	@test -n "$(MACHINE)" || { echo "make record needs a label for this machine: make record MACHINE=laptop-m2" >&2; exit 2; }
	$(BIN)/pitfalls-record "$(MACHINE)" $(if $(REPLACE),--replace) $(if $(filter 1 yes true on all,$(REFRESH)),--refresh) $(if $(filter 1 yes true on,$(ALLOW_DIRTY)),--allow-dirty)

## Record this machine with another torch release, installed in an environment of its own outside the repository:
## make record-release TORCH=2.6.0 MACHINE=epyc-2core records results/epyc-2core-torch2.6.0/ (the Versions page
## shows every claim on every recorded release)
RELEASE_VENVS ?= $(HOME)/.cache/pytorch-pitfalls
record-release:
	@test -n "$(TORCH)" || { echo "make record-release needs a torch release: make record-release TORCH=2.6.0 MACHINE=laptop-m2" >&2; exit 2; }
	@test -n "$(MACHINE)" || { echo "make record-release needs a label for this machine: make record-release TORCH=$(TORCH) MACHINE=laptop-m2" >&2; exit 2; }
	@$(MAKE) --no-print-directory record VENV=$(RELEASE_VENVS)/venv-torch$(TORCH) TORCH_SPEC=torch==$(TORCH) \
		MACHINE=$(MACHINE)-torch$(TORCH)

## Every test: recipes, experiments, the strict site build, the browser. The site is built first, alone (it times
## things: tests running beside it would disturb the measurements it caches); the tests then run in TEST_WORKERS
## processes (pytest-xdist), each taking a whole test file at a time, and read that build.
TEST_WORKERS ?= 2
TEST_SITE ?= test-artifacts/site
test: $(STAMP) browser-deps fonts
	@rm -rf $(TEST_SITE) $(TEST_SITE).log
	@mkdir -p $(dir $(TEST_SITE))
	@# its log is kept beside it: a test reads it for lines that alarm a reader (tests/test_site.py)
	@set -o pipefail; $(BIN)/mkdocs build --strict -d $(TEST_SITE) 2>&1 | tee $(TEST_SITE).log
	PITFALLS_SITE_DIR=$(TEST_SITE) $(BIN)/python -m pytest --durations=10 -n $(TEST_WORKERS) --dist loadfile

## The tests without the site build and the browser (a few minutes); FAST_MARKS picks them (CI's second Python
## adds "and not measures")
FAST_MARKS ?= not site and not browser
test-fast: $(STAMP) fonts
	$(BIN)/python -m pytest -m "$(FAST_MARKS)" -n $(TEST_WORKERS) --dist loadfile

browser-deps:
	@sh .ci/ensure-chromium.sh

## The CJK font the Chinese edition's figures are drawn in (Debian: fonts-noto-cjk)
fonts: $(STAMP)
	@sh .ci/ensure-fonts.sh $(BIN)/python

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

## Bring the Chinese catalogues (zh.po beside the code) up to date with what the site prints: an entry whose English
## changed keeps its old translation, marked fuzzy for a translator to check (tools/translations.py)
translations: $(STAMP)
	$(BIN)/python tools/translations.py

## Mutation testing of the recipes and the lab, scores checked against their targets (minutes)
mutation: $(STAMP)
	$(BIN)/python benchmarks/mutation.py

clean-cache:
	rm -rf .cache

clean: clean-cache
	rm -rf site $(VENV)
