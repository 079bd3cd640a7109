"""Where the default engine comes from: ``--engine``, then ``SELP_ENGINE``, then ``selp.toml``
beside the program (``engine = "local"``), then ``spark`` — the product's pipeline."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from selp.engines import ENGINES
from selp.errors import Location, SelpError

DEFAULT_ENGINE = "spark"
CONFIG_NAME = "selp.toml"


def read_config(program_path: str | Path) -> dict:
    """The ``selp.toml`` beside the program, or ``{}``."""
    path = Path(program_path).parent / CONFIG_NAME
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise SelpError(f"invalid TOML: {err}", Location(str(path))) from None


def choose_engine(flag: str | None, program_path: str | Path) -> str:
    """Resolve the engine by precedence; rejects unknown names with their source."""
    if flag:
        return flag
    env = os.environ.get("SELP_ENGINE")
    if env:
        if env not in ENGINES:
            raise SelpError(f"SELP_ENGINE={env!r} is not an engine; use one of {', '.join(ENGINES)}")
        return env
    cfg = read_config(program_path)
    if "engine" in cfg:
        eng = cfg["engine"]
        if eng not in ENGINES:
            where = Path(program_path).parent / CONFIG_NAME
            raise SelpError(f"engine = {eng!r} is not an engine; use one of {', '.join(ENGINES)}", Location(str(where)))
        return eng
    return DEFAULT_ENGINE
