"""`python -m evals.bench_adapters`: throughput of the bot arena and the adapters (`evals.bench.adapters`)."""
from evals.bench.adapters import main

if __name__ == "__main__":
    main()
