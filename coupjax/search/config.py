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
        }


# The registered policies' default budget (`DEFAULT_CONFIG`, what `evals.seat_table` plays):
# K = 4 worlds x R = 4 rollouts per legal action, rollouts of the ``scripted_mix`` policy
# (every seat, the searcher's own later decisions included) capped at 8 decisions and then
# scored by `heuristic_value`, worlds drawn with claim likelihoods 0.98 / 0.02; 4096 lanes.
# Besides K and R, it differs from `SearchConfig`'s defaults (random rollouts, 0.85 / 0.15)
# in three choices, each made by win rate in the seat table (below), not by any principle:
#
# * ``scripted_mix`` rollouts: uniform-random rollout opponents challenge about half of
#   all claims, so the search undervalued bluffs and overvalued honest claims; the mix of
#   the scripted bots is a closer model of the pool (and costs ~1.3x a random step).
# * cap 8 (a little over two turns of a 4-player table): less rollout noise than 12 or 24.
# * claim likelihoods 0.98 / 0.02 instead of 0.85 / 0.15.  The latter is the calibrated
#   one for the seat table's pool (mean predicted truth 0.80 against 0.80 measured over
#   759 challenge decisions); 0.98 / 0.02 is overconfident in claims (0.92 predicted) and
#   makes the search challenge less (4% of opportunities instead of 10%), and it wins
#   more.  A plausible reason (not tested): a challenge is a private risk with a shared
#   benefit (every opponent gains when the claimant loses a card), which short rollouts
#   with a heuristic leaf do not value correctly.
#
# Exploration (seat table, seed 0, 300 games, win rate; belief_ev 0.53 on the same games;
# K4R4 = 4 worlds x 4 rollouts): expected K8R1 random cap 12 (the old default) 0.41 (200
# games), K4R4 random 0.47 (200), K4R4 mix cap 12 0.50 (200), cap 24 0.44 (400), cap 8
# 0.55; with rollout_self_policy="honest" 0.55 (cap 12) and 0.53 (cap 8); K4R4 mix cap 12
# with 0.95 / 0.05 worlds 0.59; cap 8 with 0.95 / 0.05 0.62, with 0.98 / 0.02 0.64.
# thompson: 0.26 (K4R4 random cap 12), 0.33 (K2R8 mix cap 12), 0.29 (K4R4 mix cap 8),
# 0.45 (K2R8 mix cap 8, 0.95 / 0.05), 0.47 (K4R4 and K2R8, mix cap 8, 0.98 / 0.02).
# regularized (mix prior, tau 0.02, cap 8, 0.95 / 0.05): 0.62 (200 games).  At the default
# budget (300 games): 0.68 with the rollout policy as prior, 0.64 with prior_policy=
# "belief_ev" and prior_uniform 0.1 (entropy 0.20 and 0.16): anchoring to belief_ev does
# not pay, so the prior stays the rollout policy.
#
# thompson.  With the raw per-world means it stayed well below expected (0.47-0.48 at
# K4R4 and K2R8 with the choices above; 0.478 [0.456, 0.500] at 2,000 games): with a few
# rollouts per world the per-world argmax is mostly rollout noise wherever the worlds do
# not really differ, so it played near-equal actions at random (K8R4 with 0.995 / 0.005
# worlds bluffed at 0.23 of its main actions, expected at 0.12).  More rollouts helped
# (K4R16 0.52, K2R16 0.54, over budget); judging "best in world k" on denoised values
# (`_denoised_world_values`) helped more, at no cost: 300 games, K4R4 0.57, K8R2 0.56,
# K4R8 0.58, K8R4 0.60 (action entropy 0.18-0.26).
# So thompson's default (`THOMPSON_CONFIG`) is K = 8 worlds x R = 4 rollouts: more worlds
# make the shares finer (multiples of 1/8, not 1/4), at twice the cost.  It still
# challenges with about the posterior probability of a bluff (probability matching),
# where expected challenges only when the average over worlds pays.
#
# Confirmed at 2,000 games (``python -m evals.seat_table --policy NAME --games 2000 --seed
# 0``, one policy per call, the same tables): thompson 0.615 [0.594, 0.636] (action
# entropy 0.215 nats), expected 0.633 [0.611, 0.653] (entropy 0.000), regularized 0.646
# [0.625, 0.667] (0.212), belief_ev 0.540 [0.518, 0.562] (0.026).
#
# Cost: 2,000 games of ``--policy thompson`` took 334 s wall alone on the 2 idle cores,
# compilation included; expected took 336 s and regularized 358 s, run at the same time
# on the same 2 cores.  Every policy in a
# `policies.make_table_runner` list is evaluated at every step of every game (its vmapped
# `lax.switch`), so the search runs on every decision of every game, once per search
# policy in the list: a seat table given all three search policies costs their sum per row.
# The registered policies' default budget (`DEFAULT_CONFIG`, what `evals.seat_table` plays):
# K = 4 worlds x R = 4 rollouts per legal action, rollouts of the ``scripted_mix`` policy
# (every seat, the searcher's own later decisions included) capped at 8 decisions and then
# scored by `heuristic_value`, worlds drawn with claim likelihoods 0.98 / 0.02 (more
# confident in claims than the calibrated 0.85 / 0.15: it challenges less, and won more),
# 4096 lanes.  `THOMPSON_CONFIG` samples K = 8 worlds (its shares are multiples of 1/K).
# Each choice was made by win rate in the seat table on the tuning seeds
# (`coupjax.seeds.TUNING_SEEDS`); the README reports them on other seeds.
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
