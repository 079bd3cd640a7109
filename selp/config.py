"""Where the engine comes from: ``--engine``, then ``--master`` (a Spark master asks for Spark),
then ``SELP_ENGINE``, then ``selp.toml`` beside the program (``engine = "spark"``), then the
embedded engine. One :func:`choose_engine` serves every command."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from selp.errors import Location, SelpError, not_utf8

from selp.engines.base import DEFAULT as DEFAULT_ENGINE  # noqa: E402
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
    from selp.engines.registry import canonical, names, spark_engine_name

    known = names()  # registered names and aliases

    if flag:
        return canonical(flag)
    if master:
        return spark_engine_name()
    env = os.environ.get("SELP_ENGINE")
    if env:
        if env not in known:
            raise SelpError(f"SELP_ENGINE={env!r} is not an engine; use one of {', '.join(known)}")
        return canonical(env)
    cfg = read_config(program_path)
    if "engine" in cfg:
        eng = cfg["engine"]
        if eng not in known:
            where = Path(program_path).parent / CONFIG_NAME
            raise SelpError(f"engine = {eng!r} is not an engine; use one of {', '.join(known)}", Location(str(where)))
        return canonical(eng)
    return DEFAULT_ENGINE
