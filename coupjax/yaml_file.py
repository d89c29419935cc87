"""The one reader of YAML config files: training configs, the report's design matrix and
the experiments plan all come from ``configs/`` and fail the same way.  A missing file,
invalid YAML or a file that is not a mapping is one line naming the file, raised as the
caller's own error class (its command prints it and exits with status 2)."""
from __future__ import annotations

from pathlib import Path

import yaml


def read_yaml(path, error: type[Exception] = ValueError) -> dict:
    """The mapping in the YAML file ``path`` (an empty file is ``{}``); anything wrong
    with the file raises ``error`` with one line."""
    p = Path(path)
    if not p.is_file():
        raise error(f"config file {str(p)!r} does not exist")
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise error(f"config file {str(p)!r} is not valid YAML: {' '.join(str(e).split())}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"config file {str(p)!r} cannot be read: {e}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise error(f"config file {str(p)!r} must be a mapping of key: value, got {type(raw).__name__}")
    return raw
