"""`python -m evals.bench_processes`: one training job as 1 and as N processes (`evals.bench.processes`)."""
from evals.bench.processes import main

if __name__ == "__main__":
    main()
