"""Where a self-play training chunk spends its time, piece by piece, in one run.

``python -m training.profile_chunk --config configs/selfplay_cpu.yaml [--updates 10]``
times, at the config's shapes (games per device, ``rollout_steps``, network sizes,
league), each piece jitted on its own and measured side by side under the same load
(its runs on selfplay_cpu: docs/experiments/history/2026-12-03-training-chunk-profile.md):

* ``engine``: ``rollout_steps`` auto-reset engine steps of one device's games with a
  uniform legal action (`Env.step_autoreset`, no policy);
* ``league, bots``: `training.league.League.play` with the current network and its
  snapshots replaced by the uniform policy: the engine, the pool's bots and the league's
  bookkeeping (records, new games, hands for the belief target); the same without
  ``belief_ev`` in the pool, and with the ``random`` bot alone (the bookkeeping);
* ``league, networks``: the same with the networks' forward passes (policy, snapshots,
  value) as in training: the chunk's whole rollout;
* ``update``: one update of `training.selfplay.make_train` (rollout, advantages,
  ``num_epochs`` x ``num_minibatches`` Adam steps, metrics), as ``--updates`` updates in
  one chunk call (the figure is per update), and the same chunk with one epoch, so the
  difference prices the backward passes;
* ``host``: fetching a chunk's metrics to the host (what the driver does per chunk).

Each piece is compiled first, then timed ``--repeats`` times (the best is kept: the
machine may be shared).  Env steps per second are the games' engine steps (stalls
excluded) over the wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from coupjax.devices import use_host_cores


def _best(fn, repeats: int, name: str = "") -> float:
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn())  # compile and warm
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    print(f"  ({name}: first call {first:.1f} s, best of {repeats} {min(times) * 1000:.1f} ms)", flush=True)
    return min(times)


def profile(config_path: str, updates: int, repeats: int, overrides=()) -> dict:
    import jax
    import jax.numpy as jnp

    from coupjax import rollout
    from training.config import load_config, replace
    from training.league import League
    from training.selfplay import make_train

    cfg = replace(load_config(config_path, overrides), num_seeds=1, updates_per_chunk=updates)
    setup = make_train(cfg)
    D = len(setup.mesh.devices.ravel())
    B, T, league, env = cfg.num_envs // D, cfg.rollout_steps, setup.league, setup.env
    rs = setup.init(jax.random.PRNGKey(0))
    params = jax.tree.map(lambda x: x[0], jax.device_get(rs.params))
    snapshots = jax.tree.map(lambda x: x[0], jax.device_get(rs.snapshots))
    tables = league.reset(jax.random.PRNGKey(1), B)
    keys = jax.random.split(jax.random.PRNGKey(2), T)
    rows = {}

    @jax.jit
    def engine(state, key):
        def one(s, k):
            k_act, k_step = jax.random.split(k)
            a = jax.vmap(rollout.uniform_legal)(jax.random.split(k_act, B), s.legal_action_mask)
            return jax.vmap(env.step_autoreset)(s, a, jax.random.split(k_step, B)), None
        return jax.lax.scan(one, state, jax.random.split(key, T))[0]

    rows["engine"] = _best(lambda: engine(tables.state, keys[0]), repeats, "engine")

    uniform = lambda k, s: jnp.zeros(s.legal_action_mask.shape, jnp.float32)  # noqa: E731
    bots = jax.jit(lambda t, k: league.play(t, k, uniform, [uniform] * league.num_snapshots))
    rows["league, bots"] = _best(lambda: bots(tables, keys), repeats, "league, bots")
    for name, pool in (("league, no belief_ev", [x for x in league.pool_names if x != "belief_ev"]),
                       ("league, random only", ["random"])):
        lg = League(env, {x: 1.0 for x in pool}, cfg.num_snapshots, cfg.self_weight, cfg.snapshot_weight,
                    cfg.pool_margin, cfg.table_concentration)
        fn = jax.jit(lambda t, k, lg=lg: lg.play(t, k, uniform, [uniform] * lg.num_snapshots))
        rows[name] = _best(lambda fn=fn, t=lg.reset(jax.random.PRNGKey(1), B): fn(t, keys), repeats, name)

    def net(p):
        return lambda k, s: setup.policy_logits(p, s.observation)

    @jax.jit
    def networks(t, k, params, snapshots):
        snaps = [net(jax.tree.map(lambda x: x[i], snapshots)) for i in range(league.num_snapshots)]
        value = lambda s: setup.value_net.apply({"params": params["value"]}, s.observation)[:, 0]  # noqa: E731
        return league.play(t, k, net(params["policy"]), snaps, extra=value)

    rows["league, networks"] = _best(lambda: networks(tables, keys, params, snapshots), repeats, "league, networks")
    stepped = float(jax.device_get(networks(tables, keys, params, snapshots)[1].stepped.sum()))

    state = {"rs": rs}

    def chunk(run):
        state["rs"], state["m"] = run(state["rs"])
        return state["m"]

    rows["update"] = _best(lambda: chunk(setup.train_chunk), repeats, "update") / updates
    one_epoch = make_train(replace(cfg, num_epochs=1))
    state1 = {"rs": one_epoch.init(jax.random.PRNGKey(0))}

    def chunk1():
        state1["rs"], m = one_epoch.train_chunk(state1["rs"])
        return m

    rows["update, one epoch"] = _best(chunk1, repeats, "update, one epoch") / updates
    t0 = time.perf_counter()
    jax.device_get(state["m"])
    rows["host"] = time.perf_counter() - t0
    per_update_steps = stepped * D
    return {"config": config_path, "devices": D, "games_per_device": B, "rollout_steps": T, "updates": updates,
            "seconds": rows, "env_steps_per_update": per_update_steps,
            "env_steps_per_s": {k: (per_update_steps / v if k != "host" else None) for k, v in rows.items()}}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(prog="python -m training.profile_chunk", description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True)
    p.add_argument("--updates", type=int, default=10, help="updates per timed chunk call")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides")
    p.add_argument("--host-devices", type=int, default=None)
    args = p.parse_args(argv)
    if not os.path.exists(args.config):
        print(f"error: no config file {args.config}", file=sys.stderr)
        raise SystemExit(2)
    use_host_cores(args.host_devices)
    out = profile(args.config, args.updates, args.repeats, args.set)
    B, D = out["games_per_device"], out["devices"]
    print(f"{out['config']}: {D} device(s) x {B} games x {out['rollout_steps']} steps per update "
          f"({out['env_steps_per_update']:.0f} env steps)")
    print(f"  {'piece':<20} {'ms per update':>14} {'env steps/s':>12}  (engine, league and networks on one device)")
    for k, v in out["seconds"].items():
        rate = out["env_steps_per_s"][k]
        print(f"  {k:<20} {1000 * v:14.1f} {'' if rate is None else f'{rate:12.0f}'}")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
