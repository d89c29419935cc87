"""Advice from one seat's observation.

challenge   the threshold challenge advisor (calibrated beliefs, an expected-value threshold)
action_ev   one-step expected values of the main actions
explain     the advice as text for a person
recommend   the one recommendation per decision: the advisor, the values and the search reconciled
"""
