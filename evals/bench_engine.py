"""`python -m evals.bench_engine`: throughput of the JAX engine (`evals.bench.engine`)."""
from evals.bench.engine import main

if __name__ == "__main__":
    main()
