"""Where the engine comes from: ``--engine``, then ``--master`` (a Spark master asks for Spark),
then ``SELP_ENGINE``, then ``selp.toml`` beside the program (``engine = "spark"``), then the
embedded engine. One :func:`choose_engine` serves every command."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from selp.engines import ENGINES
from selp.errors import Location, SelpError, not_utf8

DEFAULT_ENGINE = "embedded"
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
    except UnicodeDecodeError:
        raise SelpError(not_utf8(path), Location(str(path))) from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise SelpError("invalid TOML: too deeply nested", Location(str(path))) from None


def choose_engine(flag: str | None, program_path: str | Path, master: str | None = None) -> str:
    """Resolve the engine by precedence (aliases such as ``local`` become their registered
    name); rejects unknown names with their source."""
    from selp.engines.registry import canonical

    if flag:
        return canonical(flag)
    if master:
        return "spark"
    env = os.environ.get("SELP_ENGINE")
    if env:
        if env not in ENGINES:
            raise SelpError(f"SELP_ENGINE={env!r} is not an engine; use one of {', '.join(ENGINES)}")
        return canonical(env)
    cfg = read_config(program_path)
    if "engine" in cfg:
        eng = cfg["engine"]
        if eng not in ENGINES:
            where = Path(program_path).parent / CONFIG_NAME
            raise SelpError(f"engine = {eng!r} is not an engine; use one of {', '.join(ENGINES)}", Location(str(where)))
        return canonical(eng)
    return DEFAULT_ENGINE
