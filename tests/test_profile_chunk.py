"""training.profile_chunk: the shapes table and its bad input (timings are not asserted)."""
from __future__ import annotations

import pytest
import yaml

from training import profile_chunk

TINY = dict(algo="selfplay", num_envs=8, rollout_steps=4, num_minibatches=1, num_epochs=1, hidden_sizes=[8],
            belief_hidden_sizes=[8], num_snapshots=1, opponents={"random": 1})


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return str(path)


def test_shape_overrides_split_and_refuse():
    assert profile_chunk.shape_overrides("num_envs=16, num_epochs=2") == ["num_envs=16", "num_epochs=2"]
    with pytest.raises(ValueError, match="KEY=VALUE"):
        profile_chunk.shape_overrides("num_envs")


@pytest.mark.parametrize("shape", ["num_envs", "num_epochs=0", "no_such_key=1"])
def test_a_bad_shape_is_one_line_and_exit_2(tiny, shape, capsys):
    with pytest.raises(SystemExit) as exit_:
        profile_chunk.main(["--config", tiny, "--shape", shape])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and err.startswith("error:")


@pytest.mark.slow
def test_shapes_count_every_game_step(tiny):
    """Two compiles of a tiny chunk.  Each row's env steps are its games x steps (no pool
    margin: no stall); the ratio is to the config's row.  Quick twin:
    test_shape_overrides_split_and_refuse."""
    out = profile_chunk.profile_shapes(tiny, updates=2, repeats=1, shapes=[["num_envs=16", "rollout_steps=2"]])
    base, other = out["shapes"]
    assert (base["shape"], other["shape"]) == ("(config)", "num_envs=16,rollout_steps=2")
    assert (base["env_steps_per_update"], other["env_steps_per_update"]) == (32, 32)
    assert base["ratio"] == 1.0 and other["ratio"] == pytest.approx(other["env_steps_per_s"] / base["env_steps_per_s"])
    assert other["num_envs"] == 16 and other["num_epochs"] == 1
