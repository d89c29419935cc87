"""One YAML reader for every config kind (`coupjax.yaml_file.read_yaml`): a training
config, the report's design matrix and the experiments plan fail the same way on a
missing file, invalid YAML or a file that is not a mapping -- one line naming the file,
as each loader's own error class (which its command prints with exit status 2)."""
from __future__ import annotations

import pytest

from coupjax.yaml_file import read_yaml
from evals import experiments
from evals.report import config as report_config
from training import config as training_config

LOADERS = {
    "training": (training_config.load_config, training_config.ConfigError),
    "report": (report_config.load_config, report_config.EvalConfigError),
    "experiments": (experiments.load_config, experiments.ExperimentsError),
}
BAD_FILES = {
    "missing": (None, "does not exist"),
    "invalid": ("a: [1, 2\nb: {c: 3\n", "is not valid YAML"),
    "list": ("- a\n- b\n", "must be a mapping of key: value, got list"),
}


@pytest.mark.parametrize("kind", BAD_FILES)
@pytest.mark.parametrize("loader", LOADERS)
def test_every_config_kind_fails_in_one_line(tmp_path, loader, kind):
    load, error = LOADERS[loader]
    text, words = BAD_FILES[kind]
    path = tmp_path / "config.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(error) as err:
        load(path)
    message = str(err.value)
    assert message.startswith(f"config file {str(path)!r} ") and words in message
    assert "\n" not in message


def test_an_empty_file_is_an_empty_mapping(tmp_path):
    (tmp_path / "empty.yaml").write_text("")
    assert read_yaml(tmp_path / "empty.yaml") == {}
