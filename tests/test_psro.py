"""PSRO around training (`training.psro`): the driver and the algorithm configs know
nothing of it, the meta-solver finds known equilibria, a bad config is one line, and
(slow) two iterations on Coup at tiny sizes, resumed without training again."""
from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from training import psro
from training.config import CONFIG_CLASSES, ConfigError

ROOT = Path(__file__).resolve().parents[1]
RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
# biased rock-paper-scissors (OpenSpiel's): the equilibrium of [[0, -a, b], [a, 0, -c], [-b, c, 0]] is (c, b, a) / sum
BIASED = np.array([[0.0, -0.25, 0.5], [0.25, 0.0, -0.05], [-0.5, 0.05, 0.0]])
BIASED_NASH = np.array([1.0, 10.0, 5.0]) / 16


# ------------------------------------------------------------------ the driver knows nothing of PSRO
def test_the_training_driver_imports_nothing_of_psro_and_no_algorithm_config_has_a_psro_key():
    tree = ast.parse((ROOT / "training" / "train.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {f"{node.module}.{a.name}" for a in node.names} | {node.module or ""}
    assert not {m for m in imported if "psro" in m}, imported
    loaded = subprocess.run([sys.executable, "-c", "import sys, training.train; print('training.psro' in sys.modules)"],
                            capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()
    assert loaded == "False"
    for cls in CONFIG_CLASSES.values():
        assert not [f.name for f in dataclasses.fields(cls) if f.name.startswith("psro")], cls.__name__


# ------------------------------------------------------------------ the meta-solver
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_projected_replicator_dynamics_finds_the_rock_paper_scissors_equilibria(scale):
    """The games as payoffs (zero-sum) and as win rates ((M + 1) / 2: constant-sum, half
    the speed); the uniform mixture is the equilibrium of plain RPS only."""
    for game, nash in ((RPS, np.full(3, 1 / 3)), (BIASED, BIASED_NASH)):
        payoffs = scale * game + (1 - scale) * np.ones((3, 3))  # scale 0.5: (game + 1) / 2
        x = np.asarray(psro.projected_replicator_dynamics(payoffs, steps=1_000_000, dt=0.01, gamma=1e-6))
        np.testing.assert_allclose(x, nash, atol=5e-3)
        assert psro.regret(payoffs, x) < 2e-3
    assert psro.regret(BIASED, psro.uniform(BIASED)) > 0.08  # uniform is far from it


def test_the_meta_strategy_drops_a_dominated_member_and_uniform_keeps_it():
    """Member 2 loses to everyone: the Nash approximation gives it (almost) nothing."""
    payoffs = np.array([[0.25, 0.2, 0.6], [0.3, 0.25, 0.6], [0.1, 0.1, 0.25]])
    prd = psro.meta_strategy(psro.psro_config_from_dict({}), payoffs)
    assert prd.sum() == pytest.approx(1.0) and prd[2] < 1e-3 and prd[1] > 0.99  # 1 beats 0 and 2
    np.testing.assert_allclose(psro.meta_strategy(psro.psro_config_from_dict({"meta_solver": "uniform"}), payoffs),
                               np.full(3, 1 / 3))


# ------------------------------------------------------------------ configs
def test_shipped_psro_config_loads():
    cfg = psro.load_psro_config(ROOT / "configs" / "psro_cpu.yaml")
    assert cfg.meta_solver == "prd" and cfg.iterations >= 2
    oracle = psro.oracle_config(cfg, {"random": 0.75, "honest": 0.25, "bluffer": 1e-5}, 2)
    assert oracle.algo == "selfplay" and oracle.opponents == {"random": 0.75, "honest": 0.25}  # a negligible share out
    assert oracle.seed == 1000 * cfg.seed + 2 and (oracle.self_weight, oracle.snapshot_weight) == (0.0, 0.0)


@pytest.mark.parametrize("text, words", [
    ("algo: psro\nmeta_solvr: prd\n", "did you mean 'meta_solver'"),
    ("algo: psro\nmeta_solver: nash\n", "'meta_solver' must be one of"),
    ("algo: psro\noracle: nope.yaml\n", "config key 'oracle': no config file 'nope.yaml'"),
    ("algo: psro\noracle: dqn_cpu.yaml\noracle_set: [lr=1]\n", "did you mean 'learning_rate'"),
    ("algo: psro\noracle: advisor.yaml\n", "config key 'oracle'"),
    ("algo: psro\ninitial: [no_such_bot]\n", "config key 'initial'"),
    ("algo: psro\niterations: 0\n", "'iterations' must be > 0"),
])
def test_a_bad_config_is_one_line_and_exit_2(tmp_path, capsys, text, words):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(SystemExit) as info:
        psro.main(["--config", str(bad), "--run-dir", str(tmp_path / "run"), "--no-wandb"])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1 and words in err[0], err
    assert not (tmp_path / "run").exists()
    with pytest.raises(ConfigError):
        psro.load_psro_config(bad)


def test_the_league_with_exploiters_is_selfplay_cpu_twice():
    """configs/selfplay_psro_cpu.yaml (the committed runs' config) is two passes of
    selfplay_cpu.yaml with a DQN exploiter at weight 2 between them (training.exploiter_league)."""
    from training.config import config_to_dict, load_config
    from training.exploiter_league import learner_config, load_exploiter_league_config, total_chunks

    cfg = load_exploiter_league_config(ROOT / "configs" / "selfplay_psro_cpu.yaml", ["seed=4"])
    assert (cfg.passes, cfg.exploiter, cfg.exploiter_weight) == (2, "dqn_cpu.yaml", 2.0)
    base = config_to_dict(load_config(ROOT / "configs" / "selfplay_cpu.yaml", ["seed=4"]))
    assert config_to_dict(learner_config(cfg)) == base and total_chunks(cfg) == 2 * base["num_chunks"]
    with pytest.raises(ConfigError, match="'exploiter' must name a DQN config"):
        load_exploiter_league_config(ROOT / "configs" / "selfplay_psro_cpu.yaml", ["exploiter=selfplay_cpu.yaml"])


# ------------------------------------------------------------------ two iterations on Coup
TINY_ORACLE = ["num_envs=4", "rollout_steps=4", "num_minibatches=1", "num_epochs=1", "updates_per_chunk=1",
               "num_chunks=1", "hidden_sizes=[8]", "belief_hidden_sizes=[8]", "num_snapshots=1", "pool_margin=0",
               "checkpoint_every=1", "self_weight=0", "snapshot_weight=0"]


@pytest.mark.slow
def test_two_iterations_on_coup_then_a_resume_that_trains_nothing(tmp_path, capsys):
    """The outer loop on Coup at tiny sizes: oracles, payoff matrix, meta-strategy, resume.

    Quick twins: test_projected_replicator_dynamics_finds_the_rock_paper_scissors_equilibria, test_shipped_psro_config_loads
    """
    cfg = psro.psro_config_from_dict({"oracle": "selfplay_cpu.yaml", "oracle_set": TINY_ORACLE, "initial": ["random"],
                                      "iterations": 2, "payoff_games": 8, "seed": 3})
    run = tmp_path / "psro"
    state = psro.run_psro(cfg, run, use_wandb=False, quiet=True)
    assert state["population"] == ["random", "iteration_1", "iteration_2"]
    payoffs, sigma = np.asarray(state["payoffs"]), np.asarray(state["meta_strategy"])
    assert payoffs.shape == (3, 3) and ((payoffs >= 0) & (payoffs <= 1)).all()
    assert sigma.shape == (3,) and sigma.sum() == pytest.approx(1.0) and (sigma > 0).all()
    assert json.loads((run / psro.STATE_FILE).read_text())["payoffs"] == state["payoffs"]
    # each oracle trained against the meta-strategy of the population before it, on its own seed
    first, second = state["iterations"]
    oracle_1 = json.loads((run / "iteration_1" / "config.json").read_text())
    oracle_2 = json.loads((run / "iteration_2" / "config.json").read_text())
    assert oracle_1["opponents"] == {"random": 1.0} and oracle_1["seed"] == 3001
    members = ["random", str((run / "iteration_1").resolve())]
    assert list(oracle_2["opponents"]) == members and oracle_2["seed"] == 3002
    np.testing.assert_allclose(list(oracle_2["opponents"].values()), list(second["trained_against"].values()))
    assert second["oracle_value"] == pytest.approx(payoffs[2, :2] @ np.asarray(list(oracle_2["opponents"].values())))
    assert (run / "iteration_2" / "export" / "policy.json").is_file()
    # resumed with one more iteration allowed: nothing is trained or played again for the first two
    before = (run / "iteration_1" / "summary.json").stat().st_mtime
    again = psro.run_psro(cfg, run, resume=True, use_wandb=False, quiet=True)
    assert again["iterations"] == state["iterations"] and again["payoffs"] == state["payoffs"]
    assert (run / "iteration_1" / "summary.json").stat().st_mtime == before
    with pytest.raises(Exception, match="not empty"):
        psro.run_psro(cfg, run, use_wandb=False)


TINY_DQN = {"base": "dqn_cpu", "num_envs": 4, "batch_size": 8, "buffer_size": 64, "warmup_steps": 8,
            "updates_per_chunk": 6, "target_update_steps": 3, "hidden_sizes": [8], "epsilon_decay_steps": 10,
            "num_chunks": 1}


@pytest.mark.slow
def test_the_league_with_exploiters_trains_its_passes_and_loads_as_a_run(tmp_path):
    """Two passes of a tiny learner with a tiny DQN exploiter between them: the second
    pass seats the exploiter at its weight, from the first pass's initial state.

    Quick twin: test_the_league_with_exploiters_is_selfplay_cpu_twice
    """
    import yaml

    from coupjax.inference import load_policy
    from training.exploiter_league import load_exploiter_league_config, run_exploiter_league

    (tmp_path / "dqn.yaml").write_text(yaml.safe_dump(TINY_DQN))
    (tmp_path / "league.yaml").write_text(yaml.safe_dump({
        "algo": "exploiter_league", "learner_set": TINY_ORACLE, "exploiter": str(tmp_path / "dqn.yaml")}))
    cfg = load_exploiter_league_config(tmp_path / "league.yaml", ["seed=5"])
    run = tmp_path / "league"
    summary = run_exploiter_league(cfg, run, use_wandb=False, quiet=True)
    assert summary["chunks_done"] == 2 and summary["exploiters"] == ["exploiter_1"]
    first = json.loads((run / "pass_1" / "config.json").read_text())
    second = json.loads((run / "pass_2" / "config.json").read_text())
    exploiter = json.loads((run / "exploiter_1" / "config.json").read_text())
    assert first["seed"] == second["seed"] == 5 and exploiter["seed"] == 5001
    assert exploiter["opponents"] == str((run / "pass_1").resolve())
    assert second["opponents"] == {**first["opponents"], str((run / "exploiter_1").resolve()): 2.0}
    assert load_policy(run).info["kind"] == "selfplay"
    assert json.loads((run / "summary.json").read_text())["chunks_done"] == 2
