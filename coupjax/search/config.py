"""The search's budget and knobs (`SearchConfig`) and the registered policies' defaults."""
from __future__ import annotations

import dataclasses

from coupjax.beliefs import posterior as POST

MODES = ("thompson", "expected", "regularized")


# ------------------------------------------------------------------ configuration
@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """The search budget and its knobs (hashable: one compiled searcher per config).

    num_worlds: K sampled hidden worlds per decision.
    rollouts_per_world: R rollouts per (world, legal action).
    rollout_policy: a registered policy name or a ``policy(key, state) -> logits``
      callable; it plays every seat in the rollouts (and is the prior of ``regularized``
      unless ``prior_policy`` is set).
    rollout_self_policy: the policy of the searching seat's own later decisions in the
      rollouts (a name or callable); ``None``: the rollout policy plays every seat.
    max_rollout_steps: decisions per rollout (the first, forced, one included) before
      `heuristic_value` scores it; ``None``: play every rollout to the end of the game.
    tau: temperature of the ``regularized`` policy.
    prior_policy: the policy ``regularized`` is kept close to (a name or callable);
      ``None``: the rollout policy.
    prior_uniform: the prior is ``(1 - prior_uniform) * pi_prior + prior_uniform *
      uniform(legal)``, so that actions a near-deterministic prior never takes stay
      reachable when the search finds them better (0: the prior as it is).
    lanes: rollouts in flight at once (the work queue's width; fewer if there are
      fewer possible jobs).
    posterior: the claim likelihoods of `posterior.sample_worlds`.
    thompson_floor: probability floor of a legal action best in no sampled world.
    heuristic_beta: sharpness of `heuristic_value`.
    denoise_worlds: judge thompson's best action per world on values with the rollout
      noise shrunk out (`_denoised_world_values`) instead of the raw per-world means.
    world_sampler: ``sampler(key, obs, num_players, num_worlds) -> posterior.Worlds``
      drawing the hidden worlds from the observation alone; ``None``: the exact
      posterior with the claim likelihoods ``posterior`` (`coupjax.search.selfplay_search`
      has one from a learned belief).
    cut_value: ``value(state, seat) -> f32[]`` on the reward scale, scoring a rollout
      cut after ``max_rollout_steps``; ``None``: `heuristic_value` (`coupjax.search.selfplay_search`
      has a trained value head's).
    """

    num_worlds: int = 8
    rollouts_per_world: int = 1
    rollout_policy: object = "random"
    rollout_self_policy: object = None
    max_rollout_steps: int | None = 12
    tau: float = 0.02
    prior_policy: object = None
    prior_uniform: float = 0.0
    lanes: int = 4096
    posterior: POST.PosteriorParams = POST.PosteriorParams()
    thompson_floor: float = 1e-6
    heuristic_beta: float = 1.5
    denoise_worlds: bool = True
    world_sampler: object = None
    cut_value: object = None

    def __post_init__(self):
        if int(self.num_worlds) < 1 or int(self.rollouts_per_world) < 1:
            raise ValueError("num_worlds and rollouts_per_world must be >= 1")
        if self.max_rollout_steps is not None and int(self.max_rollout_steps) < 1:
            raise ValueError("max_rollout_steps must be >= 1 or None")
        if not self.tau > 0:
            raise ValueError(f"tau must be > 0, got {self.tau}")
        if int(self.lanes) < 1:
            raise ValueError(f"lanes must be >= 1, got {self.lanes}")
        if not (isinstance(self.rollout_policy, str) or callable(self.rollout_policy)):
            raise TypeError("rollout_policy must be a registered policy name or a policy callable")
        if self.rollout_self_policy is not None and not (isinstance(self.rollout_self_policy, str)
                                                         or callable(self.rollout_self_policy)):
            raise TypeError("rollout_self_policy must be None, a registered policy name or a policy callable")
        if self.prior_policy is not None and not (isinstance(self.prior_policy, str) or callable(self.prior_policy)):
            raise TypeError("prior_policy must be None, a registered policy name or a policy callable")
        if not 0 <= self.prior_uniform < 1:
            raise ValueError("prior_uniform must be in [0, 1)")
        for name in ("world_sampler", "cut_value"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise TypeError(f"{name} must be None or a callable")
        if not 0 < self.thompson_floor < 1:
            raise ValueError("thompson_floor must be in (0, 1)")

    def describe(self) -> dict:
        name = lambda p: p if isinstance(p, str) or p is None else getattr(p, "__name__", repr(p))  # noqa: E731
        return {
            "num_worlds": int(self.num_worlds), "rollouts_per_world": int(self.rollouts_per_world),
            "rollout_policy": name(self.rollout_policy), "rollout_self_policy": name(self.rollout_self_policy),
            "max_rollout_steps": self.max_rollout_steps,
            "tau": float(self.tau), "prior_policy": name(self.prior_policy), "prior_uniform": float(self.prior_uniform),
            "denoise_worlds": bool(self.denoise_worlds),
            "world_sampler": "exact posterior" if self.world_sampler is None else name(self.world_sampler),
            "cut_value": "heuristic" if self.cut_value is None else name(self.cut_value),
        }


# The registered policies' default budget (`DEFAULT_CONFIG`, what `evals.seat_table` plays):
# K = 4 worlds x R = 4 rollouts per legal action, rollouts of the ``scripted_mix`` policy
# (every seat, the searcher's own later decisions included) capped at 8 decisions and then
# scored by `heuristic_value`, worlds drawn with claim likelihoods 0.98 / 0.02 (more
# confident in claims than the calibrated 0.85 / 0.15: it challenges less, and won more),
# 4096 lanes.  `THOMPSON_CONFIG` samples K = 8 worlds (its shares are multiples of 1/K).
# Each choice was made by win rate in the seat table on the tuning seeds
# (`coupjax.seeds.TUNING_SEEDS`); docs/experiments/history/ reports them on other seeds.
DEFAULT_CONFIG = SearchConfig(num_worlds=4, rollouts_per_world=4, rollout_policy="scripted_mix",
                              max_rollout_steps=8, posterior=POST.PosteriorParams(0.98, 0.02, 0.98, 0.02))
THOMPSON_CONFIG = dataclasses.replace(DEFAULT_CONFIG, num_worlds=8)


def default_config(mode: str) -> SearchConfig:
    """The registered policy ``mode``'s default budget: `THOMPSON_CONFIG` for thompson,
    `DEFAULT_CONFIG` for expected and regularized (see the comment above them)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return THOMPSON_CONFIG if mode == "thompson" else DEFAULT_CONFIG


def max_legal_actions(num_players: int) -> int:
    """The most legal actions any decision has: 4 + 3(n-1) main actions (an exchange has
    at most 6 legal keeps, fewer for every n >= 2)."""
    return 3 * num_players + 1
