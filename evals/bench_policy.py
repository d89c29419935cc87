"""`python -m evals.bench_policy`: seconds per decision of any policy (`evals.bench.policy`)."""
from evals.bench.policy import main

if __name__ == "__main__":
    main()
