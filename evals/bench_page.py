"""`python -m evals.bench_page`: the player's page, event to advice (`evals.bench.page`)."""
from evals.bench.page import main

if __name__ == "__main__":
    main()
