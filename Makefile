# Two commands do all the set-up on a fresh machine:
#   make run    installs coupjax and runs the main job on CPU defaults
#   make test   installs coupjax with its test tools and runs the test suite
PYTHON ?= python3
PIP_FLAGS ?= --quiet --disable-pip-version-check
export WANDB_MODE ?= offline

.PHONY: install run test bench

install:
	$(PYTHON) -m pip install $(PIP_FLAGS) -e ".[dev]"

run: install
	$(PYTHON) -m coupjax

test: install
	$(PYTHON) -m pytest -q -n 2 -m "not slow"

bench: install
	$(PYTHON) -m evals.bench_engine
