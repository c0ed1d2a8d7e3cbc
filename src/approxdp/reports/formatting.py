"""Numbers for tables and JSON-safe values: the formats every front end shares."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["JSON_SCHEMA_VERSION", "fmt", "fmt_values", "jsonable"]

#: Version of the ``--json`` shapes; bumped only when a key is removed or changes meaning
#: (2: a release's exact ``rows`` left the default output for ``--exact-diagnostics``).
JSON_SCHEMA_VERSION = 2


def jsonable(value: Any) -> Any:
    """``value`` with NumPy types turned into Python ones and NaN/±inf into ``None``."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


def fmt(value: float | None, digits: int = 6) -> str:
    """A number for a table: ``digits`` significant digits, ``n/a`` for None/NaN, ``∞``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}g}"


def fmt_values(values: list[float | None], significant: int = 7) -> list[str]:
    """Released values of one column, in ONE format: fixed point with the same number of
    decimals for every value (about ``significant`` significant digits on the largest), or
    scientific for all when the largest is very large or very small. ``n/a``/``∞`` as in
    :func:`fmt`. (Per-value formats mixed ``0`` with ``200.0000`` in one column.)"""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    if not finite:
        return [fmt(v) if v is None or not math.isfinite(v) else "0" for v in values]
    size = max(finite)
    out = []
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(fmt(v))
        elif not 1e-3 <= size < 1e15:
            out.append(f"{v:.{significant - 1}e}")
        else:
            decimals = max(0, significant - 1 - math.floor(math.log10(size)))
            out.append(f"{v:,.{decimals}f}")
    return out
