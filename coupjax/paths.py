"""Files shipped with the package: the run configs (``configs/`` at the repository's top
level is a link to them, so ``--config configs/NAME.yaml`` works from a checkout)."""
from __future__ import annotations

from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parent / "configs"


def config_path(name: str) -> Path:
    """The shipped config ``name`` (e.g. "advisor.yaml"), wherever the package is installed."""
    path = CONFIG_DIR / name
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in CONFIG_DIR.glob("*.yaml")))
        raise FileNotFoundError(f"no shipped config {name!r}; shipped: {known}")
    return path
