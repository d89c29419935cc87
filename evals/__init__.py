"""Evaluations and benchmarks of coupjax (run each as ``python -m evals.<name>``)."""
