"""The advisor evaluation's stages (`evals.advisor_quality` is their command):
`record` plays games and records every challengeable claim, `score` runs the advisor
on the records and computes the metrics, `fit` fits the advisor's constants on
recorded tuning games, `variants` seats belief_ev and its variants in the arena;
`metrics` scores the advisor for the report.
"""
