"""The evaluation suite and its report (``python -m evals.report``; see `evals.report.__main__`)."""
