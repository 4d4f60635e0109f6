"""The one way tests load a file of scripts/ (not a package, not on sys.path): by its path,
under its own name in ``sys.modules``, once. A script that imports another script by name
(scripts/spark_connect.py imports spark_daemons) finds it there when that one was loaded
first: load the dependency before it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as module ``name`` (loaded once per session)."""
    path = SCRIPTS / f"{name}.py"
    loaded = sys.modules.get(name)
    if loaded is not None:
        assert Path(loaded.__file__ or "").resolve() == path.resolve(), (
            f"sys.modules[{name!r}] is {loaded.__file__}, not {path}")
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
