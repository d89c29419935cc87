"""Search over sampled worlds: Thompson sampling, expected value and KL-regularized play.

CoupVisor (section IV.H) proposes Thompson sampling over the hidden roles as future
work; Ataraxos searches by sampling hidden states from a belief, rolling out from each,
and keeps the result close to a trusted policy with a KL-regularized update.  This
package does both for Coup, for the seat to move:

config   `SearchConfig` (the budget and knobs) and the registered policies' defaults
worlds   sampled worlds as engine states, rollout policies, the value of a cut rollout
queue    `make_searcher`: the batched rollouts of every legal action in one work queue
policy   the decision rules (`search_logits`) and the registered search policies
advice   `advise` and `explain`: the search's values for a person
"""
from coupjax.search.action_values import advise, explain
from coupjax.search.config import DEFAULT_CONFIG, MODES, THOMPSON_CONFIG, SearchConfig, default_config
from coupjax.search.policy import make_batched_decider, make_search_policy, search_logits
from coupjax.search.queue import SearchResult, best_shares, denoised_world_values, make_searcher
from coupjax.search.sampled_worlds import heuristic_value, world_states

__all__ = ["advise", "explain", "DEFAULT_CONFIG", "MODES", "THOMPSON_CONFIG", "SearchConfig", "default_config",
           "make_batched_decider", "make_search_policy", "search_logits", "SearchResult", "best_shares",
           "denoised_world_values", "make_searcher", "heuristic_value", "world_states"]
