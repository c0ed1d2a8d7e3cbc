"""One keyed hash that every engine computes bit for bit: the rank of a (unit, group) pair.

Per-key limits (:class:`~approxdp.engines.shapes.PerKeyLimit`) keep, for each privacy unit, the
groups with the smallest ``rank(seed, group, unit)``. For two engines to keep *the same* groups
the rank cannot be an engine's own ``hash()`` (DuckDB's and Spark's differ), so it is defined
here once, from operations both SQL dialects have — 64-bit integer ``+ * & >>``, ``xor``,
``md5`` and ``CAST(x AS string)`` — with every intermediate value below 2^63 (nothing
overflows, so ANSI-mode Spark raises nothing). :func:`reference_rank` is the same function in
plain Python; the conformance suite checks every engine against it.

Definition. Each value becomes two 32-bit *limbs*:

- integer and boolean columns (booleans as 0/1), from the 64-bit two's complement of ``v``:
  ``v & (2^32 − 1)`` and ``(v >> 32) & (2^32 − 1)``;
- every other column, from the MD5 digest ``d`` of the UTF-8 bytes of ``CAST(v AS string)``:
  bytes ``d[0:4]`` and ``d[4:8]`` read as little-endian unsigned integers (DuckDB's
  ``md5_number_upper`` holds both; in hex, ``d[0:4]`` is ``h[6:8] h[4:6] h[2:4] h[0:2]``);
  a floating-point ``-0.0`` enters as ``0.0`` (SQL's ``=`` and ``GROUP BY`` make them one
  value, so both must hash alike: else which of the two a unit's group is hashed as would
  depend on other units' rows, or split one unit's group into two capped pairs), and NaN
  and ±infinity as ``nan``, ``inf``, ``-inf`` (Python's and DuckDB's spelling; Spark maps
  Java's ``NaN``, ``Infinity`` to it);
- NULL (any column): ``0x9E3779B9`` twice.

A 32-bit state ``s`` absorbs limbs ``x`` one at a time, ``s ← (s·A + x) mod 2^32`` with
``A = 1103515245`` (odd, < 2^31, so ``s·A + x < 2^63``), and is mixed by ``fmix``: three
xor-shifts by 16 with two multiplications by ``0x45D9F3B`` mod 2^32 in between (a well-tested
32-bit integer hash). Order: the seed's limbs, ``fmix``; each group column's limbs, ``fmix``;
the unit's limbs, ``fmix``. The group part depends only on the group, so engines may compute it
once per distinct group. Ties (probability about 2^-32 per pair of groups) are broken by the
group values in ``by`` order, NULLs last.

The rank only has to be the same everywhere and look random across units; it is not a secret
(the seed is) and privacy does not rest on it: contribution bounding is stable for *any* rule
that picks a unit's groups from that unit's own rows and the seed.

Text forms agree across engines for strings, integers, booleans, decimals and dates. Floating
point keys agree where both engines print the number the same way (DuckDB and Java differ for
magnitudes outside [1e-3, 1e7), e.g. ``1e+20`` vs ``1.0E20``): cast such keys to integers or
strings first if two engines must pick identical groups.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

__all__ = [
    "FMIX_MULTIPLIER",
    "MULTIPLIER",
    "NULL_LIMB",
    "DuckDBSteps",
    "HashInput",
    "hash_input_of_duckdb_type",
    "reference_rank",
    "seed_state",
]

#: How a column enters the hash: its integer bits or its text form.
HashInput = Literal["integer", "text"]

MASK32 = 2**32 - 1
MULTIPLIER = 1_103_515_245  # A: odd, < 2^31
FMIX_MULTIPLIER = 0x45D9F3B  # < 2^31
NULL_LIMB = 0x9E3779B9

_DUCKDB_INTEGER_TYPES = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "UHUGEINT", "BOOLEAN", "INT1", "INT2", "INT4", "INT8", "INT", "LONG", "SHORT",
)  # fmt: skip
_DUCKDB_WIDE_TYPES = ("UBIGINT", "HUGEINT", "UHUGEINT")
_DUCKDB_FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8")


# -- the definition, in Python -------------------------------------------------------------
def _fmix(x: int) -> int:
    x ^= x >> 16
    x = (x * FMIX_MULTIPLIER) & MASK32
    x ^= x >> 16
    x = (x * FMIX_MULTIPLIER) & MASK32
    return x ^ (x >> 16)


def _limbs(value: object, kind: HashInput) -> tuple[int, int]:
    if value is None:
        return (NULL_LIMB, NULL_LIMB)
    if kind == "integer":
        v = int(value)  # type: ignore[call-overload]
        return (v & MASK32, (v >> 32) & MASK32)
    if isinstance(value, float) and value == 0.0:
        value = 0.0  # -0.0 and 0.0 are one value (see the module docstring)
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    digest = hashlib.md5(text.encode("utf-8"), usedforsecurity=False).digest()
    return (int.from_bytes(digest[0:4], "little"), int.from_bytes(digest[4:8], "little"))


def _absorb(state: int, limbs: Sequence[int]) -> int:
    for x in limbs:
        state = (state * MULTIPLIER + x) & MASK32
    return state


def seed_state(seed: int) -> int:
    """The state after the seed (a constant: engines take it from here)."""
    return _fmix(_absorb(0, _limbs(seed, "integer")))


def reference_rank(
    seed: int,
    group: Sequence[tuple[object, HashInput]],
    unit: tuple[object, HashInput],
) -> int:
    """The rank of one (unit, group) pair, in ``[0, 2^32)`` (the definition in the docstring).

    Args:
        seed: The per-key limit's seed (an integer in ``[0, 2^63)``).
        group: The group's values in ``by`` order, each with how it enters the hash.
        unit: The privacy unit's value and how it enters the hash.

    >>> reference_rank(7, [("a", "text"), (3, "integer")], (42, "integer"))
    481976563
    """
    state = seed_state(seed)
    for value, kind in group:
        state = _absorb(state, _limbs(value, kind))
    state = _absorb(_fmix(state), _limbs(*unit))
    return _fmix(state)


# -- the definition, in DuckDB SQL ---------------------------------------------------------
def hash_input_of_duckdb_type(sql_type: str) -> HashInput:
    """``"integer"`` for DuckDB integer and boolean types, ``"text"`` for all others."""
    base = sql_type.upper().split("(")[0].strip()
    return "integer" if base in _DUCKDB_INTEGER_TYPES else "text"


class DuckDBSteps:
    """The hash as a chain of named SQL columns, each defined once from earlier ones.

    ``select_list()`` renders ``expr AS name, ...``; DuckDB lets a SELECT list refer to
    aliases defined earlier in it, so no subexpression is written twice.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.steps: list[tuple[str, str]] = []

    def _add(self, expr: str) -> str:
        name = f"{self.prefix}{len(self.steps)}"
        self.steps.append((name, expr))
        return name

    def limbs(self, column_sql: str, sql_type: str) -> list[str]:
        """Names of the two limbs of ``column_sql``, a column of DuckDB type ``sql_type``."""
        base = sql_type.upper().split("(")[0].strip()
        if hash_input_of_duckdb_type(sql_type) == "integer":
            wide = "HUGEINT" if base in _DUCKDB_WIDE_TYPES else "BIGINT"
            v = self._add(f"CAST({column_sql} AS {wide})")
            parts = [f"{v} & {MASK32}", f"({v} >> 32) & {MASK32}"]
        else:
            if base in _DUCKDB_FLOAT_TYPES:  # -0.0 prints as such: hash it as 0.0
                column_sql = (f"(CASE WHEN {column_sql} = 0 THEN CAST(0 AS {base}) "
                              f"ELSE {column_sql} END)")
            h = self._add(f"md5_number_upper(CAST({column_sql} AS VARCHAR))")
            parts = [f"{h} & {MASK32}", f"{h} >> 32"]
        return [self._add(f"coalesce(CAST({p} AS BIGINT), {NULL_LIMB})") for p in parts]

    def absorb(self, state: str, limbs: Sequence[str]) -> str:
        """Name of ``state`` after absorbing ``limbs``: ``(s·A + x) mod 2^32`` per limb."""
        for x in limbs:
            state = self._add(f"({state} * {MULTIPLIER}::BIGINT + {x}) & {MASK32}")
        return state

    def fmix(self, x: str) -> str:
        """Name of ``fmix(x)``."""
        for _ in range(2):
            x = self._add(f"xor({x}, {x} >> 16)")
            x = self._add(f"({x} * {FMIX_MULTIPLIER}::BIGINT) & {MASK32}")
        return self._add(f"xor({x}, {x} >> 16)")

    def select_list(self) -> str:
        """``expr AS name, ...`` for every step, in order."""
        return ", ".join(f"{expr} AS {name}" for name, expr in self.steps)
