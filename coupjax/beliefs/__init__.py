"""Beliefs over the opponents' hidden cards from one seat's observation.

coupvisor  CoupVisor's per-card belief and per-hand claim probability
posterior  the exact posterior over the hidden deal, and a sampler of complete worlds
"""
