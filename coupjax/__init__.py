"""coupjax: a pure-functional Coup engine in JAX, with beliefs, advice and learning."""
from coupjax import rules
from coupjax.env import Env
from coupjax.game.views import observation_layout
from coupjax.inference import load_policy
from coupjax.match import Match
from coupjax.state import Event, State

__all__ = ["Env", "Match", "State", "Event", "rules", "observation_layout", "load_policy"]
