"""How much mass the recipe's teacher puts on challenging, beside the network it teaches.

    python docs/experiments/2026-12-05-teacher-claim-trust/teacher_challenge.py EXPORT OUT.json [KEY=VALUE ...]

On the teacher's own kind of decision (random play: every position along 400 games of 40
decisions, `coupjax.testing.trajectory_positions`, key 5), 768 decisions facing a claim
the seat's view does not rule out are drawn (numpy seed 0).  The teacher of
configs/recipe_cpu.yaml with the overrides given (`training.search_targets.teacher`, the
network EXPORT at temperature 1 as its prior) searches each four times; the rows give the
mean challenge probability of its target and of the network, the mean value gap q(challenge)
- q(pass) of the search, and the share of the claims that were true, overall and by kind
of claim.  A diagnostic for a working page, not a benchmark.
"""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from coupjax import rules
from coupjax.env import Env
from coupjax.game.tables import tables
from coupjax.inference import load_policy
from coupjax.testing import trajectory_positions
from training.config import config_file, load_config
from training.search_targets import facing_impossible_claim, teacher


def main(export, out, overrides):
    env = Env()
    cfg = load_config(config_file("recipe_cpu.yaml"), overrides)
    policy = load_policy(export, temperature=1.0, num_players=env.num_players)

    def net(k, s):
        return jnp.where(s.legal_action_mask, policy(k, s), -jnp.inf)

    decide = jax.jit(teacher(env, cfg, net, None))
    t = tables(env.num_players)
    pool = jax.jit(lambda k: trajectory_positions(env, k, 400, 40))(jax.random.PRNGKey(5))
    may = np.asarray(pool.legal_action_mask[:, t.challenge_id] & ~pool.terminated)
    possible = np.flatnonzero(may & ~np.asarray(facing_impossible_claim(pool, env.num_players)))
    idx = np.random.default_rng(0).choice(possible, 768, replace=False)
    st = jax.tree.map(lambda x: x[idx], pool)
    probs, gaps = [], []
    for k in jax.random.split(jax.random.PRNGKey(1), 4):
        logp, res = decide(jax.random.split(k, len(idx)), st)
        probs.append(np.exp(np.asarray(logp))[:, t.challenge_id])
        q, ids, valid = np.asarray(res.q), np.asarray(res.action_ids), np.asarray(res.valid)
        value = {a: np.where(valid & (ids == a), q, 0.0).sum(1) for a in (t.challenge_id, t.pass_id)}
        gaps.append(value[t.challenge_id] - value[t.pass_id])
    teach, gap = np.mean(probs, 0), np.mean(gaps, 0)
    logits = jax.vmap(net)(jax.random.split(jax.random.PRNGKey(2), len(idx)), st)
    network = np.asarray(jax.nn.softmax(logits, -1))[:, t.challenge_id]
    answering_block = np.asarray(st._phase) == rules.PHASES.index("answer_block")
    action_claim = np.asarray(rules.ACTION_CLAIM)[np.clip(np.asarray(st._action), 0, rules.NUM_MAIN_ACTIONS - 1)]
    claimed = np.where(answering_block, np.asarray(st._block_role), action_claim)
    claimant = np.where(answering_block, np.asarray(st._blocker), np.asarray(st._actor))
    true = (np.asarray(st._hands)[np.arange(len(idx)), claimant] == claimed[:, None]).any(1)
    targeted = (np.asarray(st._target) == np.asarray(st.current_player)) & ~answering_block
    groups = {"all": np.ones(len(idx), bool), "claim true": true, "claim false": ~true,
              "answering a block": answering_block, "action aimed at the seat": targeted,
              "action aimed elsewhere": ~answering_block & ~targeted,
              **{f"role {r}": claimed == i for i, r in enumerate(rules.ROLES)}}
    rows = {name: {"decisions": int(m.sum()), "teacher_challenge": float(teach[m].mean()),
                   "network_challenge": float(network[m].mean()), "value_gap": float(gap[m].mean()),
                   "claims_true": float(true[m].mean())} for name, m in groups.items() if m.any()}
    result = {"export": export, "overrides": overrides, "rows": rows}
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    for name, r in rows.items():
        print(f"{name:26s} n={r['decisions']:4d} teacher {r['teacher_challenge']:.3f} network "
              f"{r['network_challenge']:.3f} q(challenge)-q(pass) {r['value_gap']:+.3f} true {r['claims_true']:.2f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
