"""The arithmetic of datalog^sk, one definition for every engine.

* ``int`` op ``int`` is an ``int`` (64-bit): ``+ - *`` as usual, ``/`` divides truncating toward
  zero (``-7 / 2`` is ``-3``, as in Soufflé, C and DuckDB's ``//``). A result outside 64 bits and
  a division by zero are errors, never a wrapped or missing value.
* With a ``float`` operand the other is converted and the result is a ``float`` (IEEE double);
  a result that is not finite (overflow) and a division by zero are errors; ``-0.0`` is ``0.0``.
* A comparison of an ``int`` with a ``float`` converts the ``int`` to a float first (DuckDB and
  Spark do the same), so every engine decides it alike.

The reference engine evaluates with :func:`apply`; the embedded and Spark engines compile the same
rules into SQL and column expressions and raise the same messages (:func:`message`).
"""

from __future__ import annotations

import math

from selp.errors import EvalError, Location
from selp.values import INT64_MAX, INT64_MIN, Value, format_value

class ArithmeticFault(Exception):
    """An arithmetic error: ``what`` (``integer overflow``, ``float overflow``, ``division by
    zero``) and the operation with its values (``9223372036854775807 + 1``)."""

    def __init__(self, what: str, shown: str) -> None:
        super().__init__(f"{what}: {shown}")
        self.what = what
        self.shown = shown

    def in_rule(self, rule: str) -> str:
        """The message every engine gives (see :func:`message`)."""
        return message(self.what, rule, self.shown)


def message(what: str, rule: str, shown: str) -> str:
    """``integer overflow in rule r1: 9223372036854775807 + 1``."""
    return f"{what} in rule {rule}: {shown}"


def fault(op: str, a: Value, b: Value | None, what: str) -> ArithmeticFault:
    """The fault of ``a op b`` (``b`` None: unary minus)."""
    shown = f"-({format_value(a)})" if b is None else f"{format_value(a)} {op} {format_value(b)}"
    return ArithmeticFault(what, shown)


def apply(op: str, a: Value, b: Value | None = None) -> Value:
    """``a op b`` (``-a`` when ``b`` is None) under selp's rules; raises :class:`ArithmeticFault`."""
    if b is None:
        if isinstance(a, float):
            return -a + 0.0
        if a == INT64_MIN:
            raise fault(op, a, None, "integer overflow")
        return -a  # type: ignore[operator]
    if isinstance(a, float) or isinstance(b, float):
        x, y = float(a), float(b)  # type: ignore[arg-type]
        if op == "/":
            if y == 0.0:
                raise fault(op, a, b, "division by zero")
            r = x / y
        elif op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        else:
            r = x * y
        if not math.isfinite(r):
            raise fault(op, a, b, "float overflow")
        return r + 0.0
    i, j = a, b
    if op == "/":
        if j == 0:
            raise fault(op, a, b, "division by zero")
        q = abs(i) // abs(j)  # type: ignore[arg-type]
        r = q if (i >= 0) == (j >= 0) else -q  # type: ignore[operator]
    elif op == "+":
        r = i + j  # type: ignore[operator]
    elif op == "-":
        r = i - j  # type: ignore[operator]
    else:
        r = i * j  # type: ignore[operator]
    if not INT64_MIN <= r <= INT64_MAX:
        raise fault(op, a, b, "integer overflow")
    return r


def numeric_pair(a: Value, b: Value) -> tuple[Value, Value]:
    """``a`` and ``b`` ready to compare: an int beside a float becomes a float."""
    if isinstance(a, float) and isinstance(b, int) and not isinstance(b, bool):
        return a, float(b)
    if isinstance(b, float) and isinstance(a, int) and not isinstance(a, bool):
        return float(a), b
    return a, b


# An arithmetic check inside DuckDB or Spark raises an error whose text is the site (below), the
# kind of fault and the operation; :func:`located` turns it back into the located EvalError.
ERROR_MARK = "selp-eval-error|"


def site(rule: str, loc: Location) -> str:
    """The prefix of an error raised by compiled arithmetic: where, and in which rule."""
    return f"{ERROR_MARK}{loc}|{rule}|"


def located(err: BaseException) -> EvalError | None:
    """The :class:`~selp.errors.EvalError` that compiled arithmetic raised as ``err`` (an engine's
    own exception), or None when ``err`` is something else."""
    text = str(err)
    at = text.find(ERROR_MARK)
    if at < 0:
        return None
    loc, rule, what, shown = text[at + len(ERROR_MARK):].split("|", 3)
    parts = loc.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        where = Location(parts[0], int(parts[1]), int(parts[2]))
    else:
        where = Location(loc)
    shown = shown.splitlines()[0].split(" SQLSTATE:")[0].strip()  # Spark appends its error code
    return EvalError(message(what, rule, shown), where)
