"""``selfplay_search``: the search on top of a self-play run (Ataraxos's test-time half).

    selfplay_search:DIR                       # a self-play run or export directory
    selfplay_search:DIR,belief=learned,tau=0.1,num_worlds=8

The first release's search (`coupjax.search`: sampled worlds, every legal action rolled
out in each, one work queue) with the trained self-play network in every role Ataraxos
gives its networks at test time:

* **rollout policy**: every seat's later decisions in the rollouts are sampled from the
  self-play policy at the export's temperature (``rollout_temperature``; the agent as
  it plays: ``selfplay_cpu`` exports it greedy);
* **prior** of the regularised mode: ``pi ∝ pi_selfplay * exp(q / tau)`` with the policy
  as trained (``prior_temperature`` 1) keeps the search close to the trained policy
  where the rollouts cannot tell the actions apart (a greedy prior would put
  ``log(1e-30)`` on every other action and leave the search nothing to choose);
* **worlds**: from the exact posterior (``belief=posterior``, the default, with the
  search's default claim likelihoods) or from the run's learned belief head
  (``belief=learned``; `learned_world_sampler`);
* **cut rollouts**: after ``max_rollout_steps`` decisions the value head scores the
  searching seat's view of the rollout's state (``value=head``; ``auto``, the default,
  falls back to `heuristic_value` when the export holds no value head and says so in
  ``policy.value_source``).

Options after the directory (comma-separated ``key=value``): ``mode`` (``regularized``,
``expected`` or ``thompson``), ``belief``, ``value``, ``oversample`` and any
`SearchConfig` budget field (``num_worlds``, ``rollouts_per_world``,
``max_rollout_steps``, ``tau``, ``prior_uniform``, ``lanes``).

The export (`coupjax.inference`, kind ``selfplay``): the policy MLP; ``belief_file``
(an MLP: observation -> logits of P(relative opponent k holds role r), [n-1, 5]) and,
when present, ``value_file`` (an MLP: observation -> the seat's value on the reward
scale), each with its ``*_hidden_sizes``, all evaluated with `coupjax.networks.apply_mlp`.
Everything reads the observation of the seat to move (the searched worlds are sampled
from it), so the policy passes `coupjax.testing.check_policy`.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp

from coupjax import rules
from coupjax.beliefs import posterior
from coupjax.game import board
from coupjax.inference import load_policy, read_export, read_msgpack
from coupjax.networks import apply_mlp
from coupjax.policies.common import Policy
from coupjax.search.config import DEFAULT_CONFIG, MODES
from coupjax.search.policy import make_search_policy
from coupjax.observation import parse

BELIEFS = ("posterior", "learned")
VALUES = ("auto", "head", "heuristic")
# Claim likelihoods that carry no information: the exact posterior reduces to the deal
# and the hard facts (sizes, counts, proven absences); the learned belief tilts it.
NEUTRAL = posterior.PosteriorParams(0.5, 0.5, 0.5, 0.5)
EPS = 1e-4
# The budget of `DEFAULT_CONFIG` (4 worlds x 4 rollouts, cut after 8 decisions);
# tau 0.1: the search's values are means of 16 rollouts (standard errors ~0.1 on the
# reward scale), so a smaller tau would follow their noise rather than the prior.
SELFPLAY_CONFIG = dataclasses.replace(DEFAULT_CONFIG, tau=0.1)
OPTION_KEYS = ("mode", "belief", "value", "oversample", "rollout_temperature", "prior_temperature")
BUDGET_KEYS = ("num_worlds", "rollouts_per_world", "max_rollout_steps", "tau", "prior_uniform", "lanes")


# ------------------------------------------------------------------ the export's heads
def export_dir(path) -> Path:
    """The export directory of a run directory (``RUN/export``) or of itself."""
    p = Path(path)
    return p / "export" if (p / "export" / "policy.json").is_file() else p


def read_head(path, which: str):
    """(params, info) of the export's ``which`` head ("belief" or "value"), or (None, info)
    when the export has none.  ValueError naming the file if it is missing or corrupt."""
    info, _ = read_export(path)
    name = info.get(f"{which}_file")
    if name is None:
        return None, info
    f = export_dir(path) / name
    return jax.tree.map(jnp.asarray, read_msgpack(f, which)), info


def load_learned_belief(path):
    """``belief(obs) -> f32[n-1, 5]``: the run's learned P(relative opponent k holds
    role r), 0 for a seat without hidden cards."""
    params, info = read_head(path, "belief")
    if params is None:
        raise ValueError(f"the export at {str(path)!r} has no learned belief (kind {info['kind']!r})")
    n = int(info["num_players"])

    def belief(obs):
        logits = apply_mlp(params, obs, n).reshape(n - 1, rules.NUM_ROLES)
        return jnp.where((parse(obs, n).hidden[1:] > 0)[:, None], jax.nn.sigmoid(logits), 0.0)

    return belief


def load_value(path):
    """``value(obs) -> f32[]``: the run's value head, or None if the export has none."""
    params, info = read_head(path, "value")
    if params is None:
        return None
    n = int(info["num_players"])
    return lambda obs: apply_mlp(params, obs, n)[..., 0]


# ------------------------------------------------------------------ worlds and cut values
def learned_world_sampler(belief, oversample: int = 8):
    """A `SearchConfig.world_sampler` drawing worlds from a learned belief.

    Sampling-importance-resampling: ``oversample * K`` candidate worlds come from the
    exact posterior with `NEUTRAL` claim likelihoods (the deal and every hard fact of
    the observation: hand sizes, card counts, proven absences), and K of them are drawn
    (with replacement) with weights ``prod_{k,r} (p_kr / pi_kr)^has ((1 - p_kr) / (1 -
    pi_kr))^(1 - has)``, where ``p`` is the learned P(opponent k holds role r), ``pi``
    the same marginal of the candidates' distribution and ``has`` whether the world's
    hand holds r.  So the worlds keep every hard fact while their role marginals move
    from the deal's to the learned belief's, which has read the claims its own way
    (bluff rates learned in play, not assumed).
    """
    oversample = int(oversample)
    if oversample < 1:
        raise ValueError(f"oversample must be >= 1, got {oversample}")

    def sampler(key, obs, num_players, num_worlds):
        n, C = num_players, num_worlds * oversample
        k_cand, k_pick = jax.random.split(key)
        cand = posterior.sample_worlds(k_cand, obs, n, C, NEUTRAL)
        prior = jnp.clip(posterior.exact_posterior(obs, n, NEUTRAL)["role_marginals"][1:], EPS, 1 - EPS)
        p = jnp.clip(belief(obs), EPS, 1 - EPS)
        has = (cand.hands[:, 1:, :, None] == jnp.arange(rules.NUM_ROLES)).any(axis=2)  # [C, n-1, 5]
        live = (parse(obs, n).hidden[1:] > 0)[None, :, None]
        term = jnp.where(has, jnp.log(p) - jnp.log(prior), jnp.log1p(-p) - jnp.log1p(-prior))
        logw = jnp.where(live, term, 0.0).sum(axis=(1, 2))
        pick = jax.random.categorical(k_pick, logw, shape=(num_worlds,))
        return posterior.Worlds(cand.hands[pick], cand.deck[pick], cand.drawn[pick])

    sampler.__name__ = "learned_belief"
    return sampler


def value_cut(env, value):
    """A `SearchConfig.cut_value` from a value head on the seat's own view: the
    seat's value of the cut state, in [-1/(n-1), 1] (the reward scale); an eliminated
    seat's is its known loss -1/(n-1)."""
    low = -1.0 / (env.num_players - 1)

    def cut(state, seat):
        v = jnp.clip(value(env.observe(state, seat)), low, 1.0)
        return jnp.where(board.alive(state)[seat], v, low)

    cut.__name__ = "value_head"
    return cut


# ------------------------------------------------------------------ the policy
def make_selfplay_search(env, run_dir, mode: str = "regularized", belief: str = "posterior", value: str = "auto",
                         oversample: int = 8, rollout_temperature: float | None = None,
                         prior_temperature: float = 1.0, **budget) -> Policy:
    """The search over the self-play run at ``run_dir`` (module doc); ``budget``:
    `SearchConfig` fields over `SELFPLAY_CONFIG`."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if belief not in BELIEFS:
        raise ValueError(f"belief must be one of {BELIEFS}, got {belief!r}")
    if value not in VALUES:
        raise ValueError(f"value must be one of {VALUES}, got {value!r}")
    unknown = set(budget) - set(BUDGET_KEYS)
    if unknown:
        raise TypeError(f"unknown selfplay_search options {sorted(unknown)}; known: "
                        f"{', '.join(OPTION_KEYS + BUDGET_KEYS)}")
    net = load_policy(run_dir, temperature=rollout_temperature, num_players=env.num_players)
    if net.info["kind"] != "selfplay":
        raise ValueError(f"{str(run_dir)!r} holds a {net.info['kind']!r} export, not a self-play run")
    net.__name__ = "selfplay"
    prior = load_policy(run_dir, temperature=prior_temperature, num_players=env.num_players)
    prior.__name__ = f"selfplay_T{prior_temperature:g}"
    head = None if value == "heuristic" else load_value(run_dir)
    if value == "head" and head is None:
        raise ValueError(f"the export at {str(run_dir)!r} has no value head (value_file)")
    sampler = learned_world_sampler(load_learned_belief(run_dir), oversample) if belief == "learned" else None
    config = dataclasses.replace(SELFPLAY_CONFIG, rollout_policy=net, prior_policy=prior, world_sampler=sampler,
                                 cut_value=None if head is None else value_cut(env, head), **budget)
    policy = make_search_policy(env, mode, config)
    policy.__name__ = f"selfplay_search_{mode}"
    policy.run_dir = str(run_dir)
    policy.belief = belief
    policy.value_source = "value head" if head is not None else (
        "heuristic" if value == "heuristic" else "heuristic (the export has no value head)")
    return policy


def parse_arg(arg: str) -> tuple[str, dict]:
    """``"DIR,key=value,..."`` -> (DIR, options); values read as JSON where they parse
    (numbers), else as strings."""
    head, *items = str(arg).split(",")
    options = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"selfplay_search option {item!r} must look like key=value")
        if key not in OPTION_KEYS + BUDGET_KEYS:
            raise ValueError(f"unknown selfplay_search option {key!r}; known: {', '.join(OPTION_KEYS + BUDGET_KEYS)}")
        try:
            options[key] = json.loads(text)
        except json.JSONDecodeError:
            options[key] = text.strip()
    return head, options


def make_selfplay_search_spec(env, arg: str | None = None, **kwargs) -> Policy:
    """The registered ``selfplay_search`` factory: ``selfplay_search:DIR[,key=value...]``."""
    if not arg:
        raise ValueError("selfplay_search needs a self-play run directory: selfplay_search:DIR")
    run_dir, options = parse_arg(arg)
    return make_selfplay_search(env, run_dir, **{**options, **kwargs})


__all__ = ["SELFPLAY_CONFIG", "BELIEFS", "export_dir", "read_head", "load_learned_belief", "load_value",
           "learned_world_sampler", "value_cut", "make_selfplay_search", "make_selfplay_search_spec", "parse_arg"]
