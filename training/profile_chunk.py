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
  value) as in training: the chunk's whole rollout (the league rows serve as one
  training seed does: ``gathered``, `training.league.League.play`);
* ``policy inputs`` (a policy reading the exact posterior only): its features on that
  rollout's decisions, computed once each (as the rollout does), and ``policy forward``:
  the policy network alone on them (given those features);
* ``update``: one update of `training.selfplay.make_train` (rollout, advantages,
  ``num_epochs`` x ``num_minibatches`` Adam steps, metrics), as ``--updates`` updates in
  one chunk call (the figure is per update), and the same chunk with one epoch, so the
  difference prices the backward passes;
* ``host``: fetching a chunk's metrics to the host (what the driver does per chunk).

With ``--shape KEY=VALUE[,KEY=VALUE...]`` (repeatable) it times instead one whole
update (``train_chunk``, as above) at the config's shapes and at each shape's
overrides of them, side by side in one process, with the env steps per second and
their ratio to the config's row, and the same per second of this process's CPU time
(steadier on a shared machine), e.g. ``--shape num_envs=1024,rollout_steps=16,num_epochs=1``.

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

from coupjax import compile_cache
from coupjax.devices import use_host_cores
from training.config import load_config


def _best(fn, repeats: int, name: str = "", cpu: list | None = None) -> float:
    """The best wall time of ``repeats`` calls after a first (compiling) one; the best
    CPU time of this process's threads goes to ``cpu`` (steadier than wall time on a
    shared machine: other jobs' time is not counted)."""
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn())  # compile and warm
    first = time.perf_counter() - t0
    times, cpu_times = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    print(f"  ({name}: first call {first:.1f} s, best of {repeats} {min(times) * 1000:.1f} ms, "
          f"CPU {min(cpu_times) * 1000:.1f} ms)", flush=True)
    if cpu is not None:
        cpu.append(min(cpu_times))
    return min(times)


def shape_overrides(shape: str) -> list[str]:
    """``"num_envs=1024,num_epochs=1"`` -> ``["num_envs=1024", "num_epochs=1"]``; a part
    without ``=`` is a ValueError (one line for the command's error)."""
    parts = [x.strip() for x in shape.split(",") if x.strip()]
    bad = [x for x in parts if "=" not in x]
    if not parts or bad:
        raise ValueError(f"--shape {shape!r}: expected KEY=VALUE[,KEY=VALUE...]")
    return parts


def profile_shapes(config_path: str, updates: int, repeats: int, overrides=(), shapes=()) -> dict:
    """One update's wall time and env steps per second at the config's shapes and at each
    of ``shapes`` (lists of overrides on top of ``overrides``), in this process."""
    import jax

    from training.config import load_config, replace
    from training.selfplay import make_train

    rows = []
    for shape in [[], *shapes]:
        cfg = replace(load_config(config_path, [*overrides, *shape]), num_seeds=1, updates_per_chunk=updates)
        setup = make_train(cfg)
        state = {"rs": setup.init(jax.random.PRNGKey(0))}

        def chunk(setup=setup, state=state):
            state["rs"], state["m"] = setup.train_chunk(state["rs"])
            return state["m"]

        name, cpu = ",".join(shape) or "(config)", []
        seconds = _best(chunk, repeats, name, cpu) / updates
        steps = float(jax.device_get(state["m"]["env_steps"]).sum()) / updates
        rows.append({"shape": name, "num_envs": cfg.num_envs, "rollout_steps": cfg.rollout_steps,
                     "num_epochs": cfg.num_epochs, "num_minibatches": cfg.num_minibatches,
                     "seconds_per_update": seconds, "cpu_seconds_per_update": cpu[0] / updates,
                     "env_steps_per_update": steps, "env_steps_per_s": steps / seconds,
                     "env_steps_per_cpu_s": steps * updates / cpu[0]})
    for r in rows:
        r["ratio"] = r["env_steps_per_s"] / rows[0]["env_steps_per_s"]
        r["cpu_ratio"] = r["env_steps_per_cpu_s"] / rows[0]["env_steps_per_cpu_s"]
    return {"config": config_path, "devices": len(setup.mesh.devices.ravel()), "updates": updates, "shapes": rows}


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
    bots = jax.jit(lambda t, k: league.play(t, k, uniform, [uniform] * league.num_snapshots, gathered=True))
    rows["league, bots"] = _best(lambda: bots(tables, keys), repeats, "league, bots")
    for name, pool in (("league, no belief_ev", [x for x in league.pool_names if x != "belief_ev"]),
                       ("league, random only", ["random"])):
        lg = League(env, {x: 1.0 for x in pool}, cfg.num_snapshots, cfg.self_weight, cfg.snapshot_weight,
                    cfg.pool_margin, cfg.table_concentration)
        fn = jax.jit(lambda t, k, lg=lg: lg.play(t, k, uniform, [uniform] * lg.num_snapshots, gathered=True))
        rows[name] = _best(lambda fn=fn, t=lg.reset(jax.random.PRNGKey(1), B): fn(t, keys), repeats, name)

    def net(p):
        return lambda k, s, *inputs: setup.policy_logits(p, s.observation, *inputs)

    inputs = None if setup.policy_inputs is None else (lambda s: setup.policy_inputs(s.observation))

    @jax.jit
    def networks(t, k, params, snapshots):
        snaps = [net(jax.tree.map(lambda x: x[i], snapshots)) for i in range(league.num_snapshots)]
        value = lambda s: setup.value_net.apply({"params": params["value"]}, s.observation)[:, 0]  # noqa: E731
        return league.play(t, k, net(params["policy"]), snaps, extra=value, gathered=True, inputs=inputs)

    rows["league, networks"] = _best(lambda: networks(tables, keys, params, snapshots), repeats, "league, networks")
    rec = networks(tables, keys, params, snapshots)[1]
    stepped = float(jax.device_get(rec.stepped.sum()))
    if setup.policy_inputs is not None:  # what the policy reads beside the observation, once per decision
        obs, features = rec.obs.reshape((-1, rec.obs.shape[-1])), jax.jit(setup.policy_inputs)
        rows["policy inputs"] = _best(lambda: features(obs), repeats, "policy inputs")
    forward = jax.jit(lambda p, o, *x: setup.policy_logits(p, o, *x))
    read = () if rec.inputs is None else (rec.inputs.reshape((-1, rec.inputs.shape[-1])),)
    rows["policy forward"] = _best(lambda: forward(params["policy"], rec.obs.reshape((-1, rec.obs.shape[-1])), *read),
                                   repeats, "policy forward")

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
    p.add_argument("--shape", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE...]",
                   help="time whole updates at these overrides beside the config's (repeatable; module doc)")
    p.add_argument("--host-devices", type=int, default=None)
    args = p.parse_args(argv)
    if not os.path.exists(args.config):
        print(f"error: no config file {args.config}", file=sys.stderr)
        raise SystemExit(2)
    try:
        shapes = [shape_overrides(x) for x in args.shape]
        for shape in [[], *shapes]:  # every shape's config checked before anything compiles
            load_config(args.config, [*args.set, *shape])
    except ValueError as err:  # a ConfigError too
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2)
    use_host_cores(args.host_devices)
    compile_cache.enable()  # as training.train: the same XLA flags, and a second run loads its programs
    if shapes:
        out = profile_shapes(args.config, args.updates, args.repeats, args.set, shapes)
        print(f"{out['config']}: whole updates on {out['devices']} device(s), {out['updates']} per timed call")
        print(f"  {'shape':<62} {'games':>6} {'steps':>5} {'epochs':>6} {'ms/update':>10} {'env steps/s':>12} "
              f"{'ratio':>6} {'per CPU-s':>10} {'ratio':>6}")
        for r in out["shapes"]:
            print(f"  {r['shape']:<62} {r['num_envs']:6d} {r['rollout_steps']:5d} {r['num_epochs']:6d} "
                  f"{1000 * r['seconds_per_update']:10.1f} {r['env_steps_per_s']:12.0f} {r['ratio']:6.2f} "
                  f"{r['env_steps_per_cpu_s']:10.0f} {r['cpu_ratio']:6.2f}")
        print(json.dumps(out))
        return out
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
