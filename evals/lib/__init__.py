"""What the commands and the report share: paired play (`play`, `paired`), the statistics
(`stats`), the exploitation probes, the reaction counts, sharding over devices, the
tested policies and the advisor's evaluation (`advisor`).  It imports no command and
nothing of `evals.report`, so a command never reaches into the report to reuse a piece."""
