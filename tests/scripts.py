"""A script of the repository (bench/, examples/) loaded as a module, to test it as it is run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path, name: str | None = None) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
