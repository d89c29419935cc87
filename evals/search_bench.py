"""`python -m evals.search_bench`: throughput of the sampled-world search (`evals.bench.search`)."""
from evals.bench.search import main

if __name__ == "__main__":
    main()
