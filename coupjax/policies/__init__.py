"""Policies: ``policy(key, state) -> logits`` functions, found by name or spec.

registry   the lazy registry: name -> "module:factory" and its doc
spec       the one resolver of a policy spec (a name, a run directory, module:function)
common     the interface and what every policy shares (masked logits, entropy, bluffs)
pools      the one roster: scripted bots, their rates, the evaluation pool, conditions
scripted   the scripted bots and their mixture
belief_ev  the exact posterior, the challenge advisor and the one-step EV as a policy
"""
from coupjax.policies.common import NEVER, Policy, masked_logits, policy_entropy, sample_action
from coupjax.policies.registry import describe_policies, make_policy, policy_names, register_policy
from coupjax.policies.spec import PolicySpecError, resolve_policy

__all__ = ["NEVER", "Policy", "masked_logits", "policy_entropy", "sample_action", "describe_policies",
           "make_policy", "policy_names", "register_policy", "PolicySpecError", "resolve_policy"]
