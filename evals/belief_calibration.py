"""Calibration of a self-play run's learned belief, next to the exact posterior and CoupVisor's.

    python -m evals.belief_calibration --run DIR [--decisions N] [--seed S] [--condition NAME ...] [--out FILE.json]

The run's exported policy sits in one seat of 4-player tables (`training.league`: seat
uniform, the other seats drawn from an opponent mix); at every decision of that seat
three beliefs read its observation and say, for each opponent with influence and each
role, the probability that the opponent's hand holds the role:

* ``learned``: the run's belief head (`training.selfplay.load_belief`);
* ``exact_posterior``: `coupjax.beliefs.posterior.exact_posterior` (its role marginals),
  which assumes fixed claim likelihoods (`PosteriorParams`: an honest claim 0.85, a
  bluff 0.15);
* ``coupvisor``: `coupjax.beliefs.coupvisor.claim_truth_probabilities`.

They are scored against the true hands on the same decisions (`coupjax.metrics`:
Brier score, expected calibration error over 10 bins, log loss), over every
(opponent, role) entry and over the entries of roles the opponent has claimed since
its hand was renewed, where the claim likelihoods matter.  The mixes: ``pool`` (the
seat table's: uniform over `coupjax.policies.pools.OPPONENTS`), the conditions of
`coupjax.policies.pools.CONDITIONS`, and ``bluffer_heavy`` (bluffers and aggressive
bots, whose bluff rates of 0.5 and 0.25 are far from the posterior's assumption).
Seeds used to tune are refused (`coupjax.seeds`).
"""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from coupjax import metrics
from coupjax.args import Parser, fail, output_file, positive_int, report_seed
from coupjax.beliefs import coupvisor
from coupjax.beliefs.posterior import exact_posterior
from coupjax.env import Env
from coupjax.inference import load_policy
from coupjax.policies.pools import CONDITIONS, OPPONENTS
from coupjax.seeds import REPORT_SEED
from coupjax.observation import parse

MIXES = {"pool": {name: 1.0 for name in OPPONENTS}, **CONDITIONS,
         "bluffer_heavy": {"bluffer": 0.6, "aggressive": 0.3, "random": 0.1}}
BELIEFS = ("learned", "exact_posterior", "coupvisor")


def record_decisions(env, policy, mix: dict, num_decisions: int, key, lanes: int = 256):
    """(obs float32[N, obs], truth float32[N, n-1, 5], valid bool[N, n-1]): the policy's
    decisions in tables whose other seats are drawn from ``mix``."""
    from training.league import League

    league = League(env, mix, num_snapshots=0, self_weight=0.0, snapshot_weight=0.0)
    steps = max(8, -(-num_decisions * env.num_players // lanes))

    @jax.jit
    def play(key):
        k_reset, k_run = jax.random.split(key)
        tables = league.reset(k_reset, lanes)
        keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(jax.random.split(k_run, steps))
        rec = league.play(tables, keys, policy)[1]
        return rec.obs, rec.hands_target, rec.hands_valid, rec.learner

    obs, truth, valid, mine = jax.device_get(play(key))
    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    mine = flat(mine)
    return flat(obs)[mine][:num_decisions], flat(truth)[mine][:num_decisions], flat(valid)[mine][:num_decisions]


def beliefs(env, learned, obs, chunk: int = 4096) -> dict:
    """name -> float32[N, n-1, 5]: each belief's P(opponent holds role) at each observation."""
    n = env.num_players
    fns = {"learned": learned,
           "exact_posterior": lambda o: exact_posterior(o, n)["role_marginals"][1:],
           "coupvisor": lambda o: coupvisor.claim_truth_probabilities(o, n)[1:]}
    out = {}
    for name, fn in fns.items():
        f = jax.jit(jax.vmap(fn))
        out[name] = np.concatenate([np.asarray(f(jnp.asarray(obs[i:i + chunk]))) for i in range(0, len(obs), chunk)])
    return out


def score(probs: dict, truth, valid, claimed) -> dict:
    """name -> {subset -> Brier, ECE, log loss, entries}."""
    sel = {"all": np.broadcast_to(valid[..., None], truth.shape), "claimed": valid[..., None] & claimed}
    out = {}
    for name, p in probs.items():
        out[name] = {}
        for subset, m in sel.items():
            y, q = truth[m], np.clip(p[m], 1e-6, 1 - 1e-6)
            out[name][subset] = {"brier": metrics.brier(y, q), "ece": metrics.ece(y, q),
                                 "log_loss": float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))),
                                 "entries": int(m.sum())}
    return out


def main(argv=None) -> dict:
    prog = "python -m evals.belief_calibration"
    ap = Parser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="a self-play run directory (or its export)")
    ap.add_argument("--condition", action="append", choices=list(MIXES),
                    help=f"opponent mix (repeatable; default: {', '.join(MIXES)})")
    ap.add_argument("--decisions", type=positive_int, default=20000, help="decisions of the run's policy per mix")
    ap.add_argument("--seed", type=report_seed, default=REPORT_SEED, help="table seed (tuning seeds are refused)")
    ap.add_argument("--out", type=output_file)
    args = ap.parse_args(argv)
    from training.selfplay import load_belief

    try:
        policy, learned = load_policy(args.run), load_belief(args.run)
    except ValueError as err:
        fail(prog, err)
    env = Env(int(policy.info["num_players"]))
    results = {"run": str(args.run), "seed": args.seed, "mixes": {}}
    console = Console()
    for i, cond in enumerate(args.condition or list(MIXES)):
        with console.status(f"{cond}: playing and scoring {args.decisions:,} decisions"):
            key = jax.random.fold_in(jax.random.PRNGKey(args.seed), i)
            obs, truth, valid = record_decisions(env, policy, MIXES[cond], args.decisions, key)
            claims = np.asarray(jax.vmap(lambda o: parse(o, env.num_players).claims[1:])(jnp.asarray(obs)))
            rows = score(beliefs(env, learned, obs), truth, valid, claims > 0)
        results["mixes"][cond] = {"mix": MIXES[cond], "decisions": int(len(obs)), "scores": rows}
        table = Table(title=f"{cond}: {len(obs):,} decisions of the run's policy, seed {args.seed}")
        for col in ("belief", "subset", "Brier", "ECE", "log loss", "entries"):
            table.add_column(col, justify="left" if col in ("belief", "subset") else "right")
        for name, by in rows.items():
            for subset, r in by.items():
                table.add_row(name, subset, f"{r['brier']:.4f}", f"{r['ece']:.4f}", f"{r['log_loss']:.4f}",
                              f"{r['entries']:,}")
        console.print(table)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
