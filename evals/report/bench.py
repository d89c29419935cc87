"""`python -m evals.report.bench`: speed of the evaluation suite's parts (`evals.bench.report`)."""
from evals.bench.report import main

if __name__ == "__main__":
    main()
