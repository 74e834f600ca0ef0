# Every target creates or reuses the virtual environment first (torch 2.13.0: the CPU build where pip's index has it; from
# PyPI on Linux that is the CUDA build, so see the README for TORCH_SPEC with the CPU wheel index).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
# Test processes (pytest-xdist), one torch thread each: most of a test's time is one Python process starting up or
# stepping small boards, so a second process fills the second core. WORKERS=0 runs everything in one process.
WORKERS ?= 2
PORT ?= 7860
PYTEST := OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(PY) -m pytest -q -n $(WORKERS) --dist worksteal

.PHONY: install install-browser test test-all lint eval bench train demo clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)  ## the fast tests (about 6 minutes on 2 CPU cores)
	$(PYTEST) -m "not slow"

test-all: $(STAMP)  ## every test, the end-to-end runs included: what CI runs
	$(PYTEST)

lint: $(STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

eval: $(STAMP)  ## the baselines and the shipped agents on dev
	for a in stop random demonstrations; do $(PY) eval.py agent=$$a split=dev || exit 1; done
	$(PY) eval.py agent=policy ckpt_path=checkpoints/paper/approach.ckpt split=dev

bench: $(STAMP)
	$(PY) -m blocks.bench env
	$(PY) -m blocks.bench train

demo: $(STAMP)  ## the page to try the agents: http://127.0.0.1:$(PORT)
	$(PY) -m blocks.demo port=$(PORT)

install-browser:  ## headless Chromium and its driver (Debian's packages) for the browser test
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }

train: $(STAMP)  ## the main job: the paper's approach from scratch, then its selected checkpoint on dev
	$(PY) train.py experiment=paper_bandit

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
