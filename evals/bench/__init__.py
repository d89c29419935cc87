"""Every benchmark (speed, side by side, with the load average beside each figure).  Each
runs under its old command name, ``python -m evals.bench_NAME`` (``evals.search_bench``,
``evals.report.bench``), a module of two lines that calls its ``main`` here.  Importing
this package loads nothing (``python -m evals.bench_gpu`` runs on a bare GPU machine)."""
