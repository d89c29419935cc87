"""`python -m evals.bench_startup`: a first use's wait, cold and warm (`evals.bench.startup`)."""
from evals.bench.startup import main

if __name__ == "__main__":
    main()
