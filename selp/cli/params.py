"""Command-line parameters shared by ``selp`` and ``selp cdss``: ``-k`` and ``--monoid-plugin``.

Both check their values while click parses the command line and raise :class:`SelpError`, which
the CLI prints as one ``error:`` line (click's own usage errors take three lines and echo the
whole value).
"""

from __future__ import annotations

import re
from typing import Any, Callable

import click

from selp.errors import SelpError, clip, echo
from selp.topk import K_MAX  # not selp.topk.task: the CLI's start would import instrumentation

_INT = re.compile(r"\s*[+-]?[0-9]+\s*")


class TreesPerFact(click.ParamType):
    """``-k``: an integer from 1 to :data:`~selp.topk.K_MAX` (the kernel's int32 ranks).

    Below 1 is a usage error (exit 2), as with ``click.IntRange(min=1)``; above the bound is a
    one-line :class:`SelpError` (exit 1), checked on the digits before ``int()`` so that no
    length of input can make the conversion itself fail."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            text = str(value)
        else:
            text = str(value)
            if not _INT.fullmatch(text):
                self.fail(f"{echo(text)} is not a valid integer.", param, ctx)
        digits = text.strip().lstrip("+-").lstrip("0")
        if not text.strip().startswith("-") and (len(digits) > len(str(K_MAX)) or int(digits or "0") > K_MAX):
            raise SelpError(f"-k {clip(text.strip(), 40)} is too large: at most {K_MAX} trees per fact")
        k = int(text)
        if k < 1:
            self.fail(f"{k} is not in the range x>=1.", param, ctx)
        return k

    def get_metavar(self, param: click.Parameter, *args: Any, **kwargs: Any) -> str:
        return "INTEGER RANGE"


TREES_PER_FACT = TreesPerFact()


def _load_plugins(ctx: click.Context, param: click.Parameter, specs: tuple[str, ...]) -> tuple[str, ...]:
    from selp.topk.monoid import load_monoid_plugin

    for spec in specs:
        load_monoid_plugin(spec)
    return specs


MONOID_PLUGIN_HELP = (
    "Load a user monoid from the Python object MODULE:ATTR -- this IMPORTS AND RUNS THAT MODULE'S"
    " CODE -- then rank by it with --monoid (or RANK BY) giving its name or MODULE:ATTR. Repeatable."
    " Monoids registered by installed packages (entry point group selp.monoids) need no option."
)


def monoid_plugin_option(f: Callable) -> Callable:
    """``--monoid-plugin MODULE:ATTR`` (repeatable): the only way text on a command line makes
    selp import a module for a monoid; queries, patterns and files never do."""
    return click.option(
        "--monoid-plugin", "monoid_plugins", multiple=True, metavar="MODULE:ATTR",
        callback=_load_plugins, expose_value=False, is_eager=True, help=MONOID_PLUGIN_HELP,
    )(f)


class IntList(click.ParamType):
    """A comma-separated list of integers of at least ``minimum`` (``--stub-extra 1,2,8``); a bad
    value is one ``error:`` line naming it."""

    name = "integers"

    def __init__(self, minimum: int = 0) -> None:
        self.minimum = minimum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[int]:
        if isinstance(value, list):
            return value
        parts = [p for p in str(value).split(",") if p.strip()]
        option = f"--{param.name.replace('_', '-')}" if param is not None and param.name else "value"
        if not parts or not all(_INT.fullmatch(p) and len(p.strip()) < 12 for p in parts) or min(int(p) for p in parts) < self.minimum:
            raise SelpError(f"{option}: {clip(str(value))!r} is not a comma-separated list of integers >= {self.minimum}")
        return [int(p) for p in parts]
