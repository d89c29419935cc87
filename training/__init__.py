"""Training for coupjax: the learner's single-agent view, rewards, a replay buffer,
DQN and behaviour cloning, checkpoints and the `python -m training.train` entry point.

Everything numeric is a pure function; `make_train(config)` (DQN) returns a pure
``train(key)`` and a ``train_chunk(runner_state)`` that is one jitted `lax.scan`.
"""
