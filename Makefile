# Two commands do all the set-up on a fresh machine:
#   make run    installs coupjax and runs the main job on CPU defaults
#   make test   installs coupjax with its test tools and runs the test suite
PYTHON ?= python3
PIP_FLAGS ?= --quiet --disable-pip-version-check
export WANDB_MODE ?= offline

.PHONY: install run test bench bench-gpu

install:
	$(PYTHON) -m pip install $(PIP_FLAGS) -e ".[dev]"

run: install
	$(PYTHON) -m coupjax

# --durations: the CI log names the slowest tests, where the next cut of the quick tier's time is
test: install
	$(PYTHON) -m pytest -q -n 2 --dist loadscope -m "not slow" --durations=25

bench: install
	$(PYTHON) -m evals.bench_engine

# The GPU figures in one run of about 4 minutes (small sizes on a CPU) into BENCH_GPU_OUT.
# No install step: a lent GPU machine may have no network, and the script needs only JAX's stack.
BENCH_GPU_OUT ?= bench_gpu.json
bench-gpu:
	$(PYTHON) -m evals.bench_gpu --out $(BENCH_GPU_OUT)
