"""Ordered monoids that rank derivation trees ([DGM15] Definition 3.5 and Example 3.7; docs/references.md).

A monoid (M, +, 0, <) has + commutative and associative with x + y <= min(x, y): adding a rule or
a fact never makes a tree better. The weight of a tree is the sum of its rule and leaf weights.

selp orders weights through a *sort key* (smaller key = better tree) so that "best" means the
same everywhere: confidence sorts by ``-w``, cost by ``w``. Ties are broken by the smaller tree
(fewer rule occurrences) and then by a structural hash of the tree, so rankings are
reproducible and top-k is well defined even when infinitely many trees share a weight.

Weights are kept in an internal numeric form (floats, or ints for ``size`` and ``access``) so
that the Spark engine can combine them with native column expressions; :meth:`Monoid.display`
turns them back into what users wrote (``access`` levels are letters).

A user monoid is any object with this interface, registered under the entry point group
``selp.monoids`` by an installed package, or loaded explicitly with :func:`load_monoid_plugin`
(the CLI's ``--monoid-plugin module:attr``). A monoid *name* -- from ``--monoid``, a query's
``RANK BY``, a saved DTable -- never imports anything: text that comes from a query, a pattern or
a file must not run code. Without ``spark_combine``/``spark_key`` a user monoid works with the
local engine only.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable

from selp.errors import SelpError, clip, echo

Weight = Any  # float or int, the monoid's internal form


@dataclass(frozen=True)
class Monoid:
    """An ordered monoid with the operations both engines need."""

    name: str
    one: Weight  # the neutral element: weight of copy steps, unweighted rules and facts
    combine: Callable[[Weight, Weight], Weight]
    key: Callable[[Weight], float]  # smaller is better
    parse: Callable[[str], Weight]  # a weight as written in a program or a _weight column
    rule_weight_override: Weight | None = None  # size: every rule weighs -1 whatever is written
    fact_weight_override: Weight | None = None  # size: facts weigh 0
    show: Callable[[Weight], Any] = lambda w: w
    spark_type: str | None = "double"  # Spark SQL type of the weight column
    spark_combine: Callable[[Any, Any], Any] | None = None  # (Column, Column) -> Column
    spark_key: Callable[[Any], Any] | None = None  # Column -> Column, ascending = better
    description: str = ""
    # parse is float(raw) restricted to this closed range (finite, not NaN): lets a columnar
    # engine read a million weights with one cast instead of a parse call each
    float_range: tuple[float, float] | None = None

    def rule_weight(self, raw: str | None, where: str = "") -> Weight:
        """The weight of a rule of the original program (``raw`` as written, or None)."""
        if self.rule_weight_override is not None:
            return self.rule_weight_override
        return self.one if raw is None else self._parse(raw, where)

    def fact_weight(self, raw: str | None, where: str = "") -> Weight:
        """The weight of an EDB fact (its ``_weight`` cell, or None)."""
        if self.fact_weight_override is not None:
            return self.fact_weight_override
        return self.one if raw is None or raw == "" else self._parse(raw, where)

    def _parse(self, raw: str, where: str) -> Weight:
        try:
            return self.parse(raw)
        except (ValueError, TypeError) as err:
            detail = str(err) or "not a weight"
            raise SelpError(f"{where}{': ' if where else ''}weight {echo(raw)} is not valid for monoid {self.name}: {detail}") from None

    def display(self, w: Weight) -> Any:
        """The weight as users write it (JSON-friendly), floats cut to 12 significant digits so
        that JSON and text agree (0.55404, not 0.5540400000000001 from 0.8 x 0.69255)."""
        return tidy_weight(self.show(w))

    @property
    def on_spark(self) -> bool:
        return self.spark_combine is not None and self.spark_key is not None and self.spark_type is not None


WEIGHT_DIGITS = 12  # products and sums of a few weights: float noise shows from digit 16 on


def tidy_weight(w: Any) -> Any:
    """A float weight rounded to :data:`WEIGHT_DIGITS` significant digits; anything else as is."""
    return float(f"{w:.{WEIGHT_DIGITS}g}") if isinstance(w, float) and math.isfinite(w) else w


def format_weight(w: Any) -> str:
    """A displayed weight as text: the same digits as its JSON (3 for 3.0, 0.28 for 0.28)."""
    return f"{w:.{WEIGHT_DIGITS}g}" if isinstance(w, float) else str(w)


def _unit_interval(raw: str) -> float:
    x = float(raw)
    if not 0.0 <= x <= 1.0 or math.isnan(x):
        raise ValueError("expected a number in [0, 1]")
    return x


def _non_negative(raw: str) -> float:
    x = float(raw)
    if not x >= 0.0 or math.isinf(x):
        raise ValueError("expected a finite number >= 0")
    return x


ACCESS_LEVELS = "TSCU"  # top secret < secret < confidential < unclassified (public)


def _access(raw: str) -> int:
    level = raw.strip().upper()
    if len(level) != 1 or level not in ACCESS_LEVELS:
        raise ValueError("expected one of T, S, C, U")
    return ACCESS_LEVELS.index(level)


def _spark_functions():
    from pyspark.sql import functions as F

    return F


def _builtins() -> dict[str, Monoid]:
    def least(a, b):
        return _spark_functions().least(a, b)

    return {
        "confidence": Monoid(
            "confidence", 1.0, lambda a, b: a * b, lambda w: -w, _unit_interval,
            spark_combine=lambda a, b: a * b, spark_key=lambda c: -c, float_range=(0.0, 1.0),
            description="([0,1], ·, 1, <): the product of confidences; higher is better",
        ),
        "min-confidence": Monoid(
            "min-confidence", 1.0, min, lambda w: -w, _unit_interval,
            spark_combine=least, spark_key=lambda c: -c, float_range=(0.0, 1.0),
            description="([0,1], min, 1, <): a tree is as credible as its weakest step",
        ),
        "size": Monoid(
            "size", 0, lambda a, b: a + b, lambda w: -w, int,
            rule_weight_override=-1, fact_weight_override=0, spark_type="bigint",
            # kept negative inside (bigger is better for every built-in but cost), shown as counts
            show=lambda w: -w,
            spark_combine=lambda a, b: a + b, spark_key=lambda c: -c,
            description="the number of rule occurrences: smaller trees first",
        ),
        "access": Monoid(
            "access", len(ACCESS_LEVELS) - 1, min, lambda w: -w, _access, show=lambda w: ACCESS_LEVELS[w],
            spark_type="int", spark_combine=least, spark_key=lambda c: -c,
            description="levels T < S < C < U, min: a tree is as public as its most secret part",
        ),
        "cost": Monoid(
            "cost", 0.0, lambda a, b: a + b, lambda w: w, _non_negative,
            spark_combine=lambda a, b: a + b, spark_key=lambda c: c, float_range=(0.0, math.inf),
            description="(non-negative reals, +, 0): total trust cost; smaller is better",
        ),
    }


BUILTIN = _builtins()


# monoids loaded by load_monoid_plugin, by their name and by the module:attr they came from
_PLUGINS: dict[str, Monoid] = {}


def load_monoid_plugin(spec: str) -> Monoid:
    """Import ``module:attr`` and register the monoid it names (under its ``name`` and under
    ``spec``) for :func:`get_monoid`. This runs the module's code: call it only for a module the
    user named explicitly as a plug-in (``--monoid-plugin``), never for a name read from a query
    or a file."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise SelpError(f"--monoid-plugin expects MODULE:ATTR, got {echo(spec)}")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise SelpError(f"--monoid-plugin {echo(spec)}: cannot load it: {clip(str(err))}") from None
    except Exception as err:  # the plug-in's own code failed while importing: report, not a traceback
        raise SelpError(f"--monoid-plugin {echo(spec)}: importing it raised {type(err).__name__}: {clip(str(err))}") from None
    m = _check(obj, spec)
    if m.name in BUILTIN:  # engines pick compiled code by name: a plug-in must not pass for one
        raise SelpError(f"--monoid-plugin {echo(spec)}: its name {echo(m.name)} is a built-in monoid's; rename it")
    _PLUGINS[m.name] = _PLUGINS[spec] = m
    return m


def get_monoid(name: str) -> Monoid:
    """A built-in monoid, one loaded by :func:`load_monoid_plugin`, or an entry point of group
    ``selp.monoids`` (installed packages), by name. Never imports a module named by ``name``."""
    if name in BUILTIN:
        return BUILTIN[name]
    if name in _PLUGINS:
        return _PLUGINS[name]
    for ep in entry_points(group="selp.monoids"):
        if ep.name == name:
            return _check(ep.load(), name)
    known = ", ".join(sorted(BUILTIN))
    if ":" in name:
        raise SelpError(
            f"monoid {echo(name)} is not loaded: a monoid is never imported from a query or file;"
            f" to use a Python object, give --monoid-plugin MODULE:ATTR (it runs that module's code)"
        )
    raise SelpError(f"unknown monoid {echo(name)} (built in: {known}; or a plug-in loaded with --monoid-plugin)")


def _check(obj: Any, name: str) -> Monoid:
    if isinstance(obj, Monoid):
        return obj
    missing = [a for a in ("name", "one", "combine", "key", "parse") if not hasattr(obj, a)]
    if missing:
        raise SelpError(f"monoid {name!r} lacks {', '.join(missing)} (see selp.topk.monoid.Monoid)")
    return Monoid(
        obj.name, obj.one, obj.combine, obj.key, obj.parse,
        getattr(obj, "rule_weight_override", None), getattr(obj, "fact_weight_override", None),
        getattr(obj, "show", lambda w: w), getattr(obj, "spark_type", None),
        getattr(obj, "spark_combine", None), getattr(obj, "spark_key", None), getattr(obj, "description", ""),
    )
