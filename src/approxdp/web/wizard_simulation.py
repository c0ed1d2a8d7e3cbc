"""The release wizard's simulation: the query on synthetic data made from public choices only.

Step 3 of :mod:`~approxdp.web.wizard_steps`: :func:`simulate` runs the query on
:func:`synthetic_table` (built from the schema and the declared bounds and domains, never from
the data) with a throwaway in-memory accountant and a fixed seed — accuracy to expect, spending
nothing; every number is marked a seeded simulation, NOT private. :func:`release_events` uses
the same synthetic table to learn what a release will spend (its events depend only on public
parameters).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from approxdp.accounting import PrivacyAccountant
from approxdp.errors import InsufficientDataError, SmallDataWarning
from approxdp.events import PrivacyEvent
from approxdp.releases.kinds import RELEASE_KINDS
from approxdp.reports.releases import release_dict
from approxdp.web.forms import integer
from approxdp.web.wizard_spec import ReleaseSpec, run_query, table_options, typed_domain

__all__ = ["SIMULATION_SEED", "release_events", "simulate", "small_data_advice",
           "synthetic_table"]

#: Seed of every simulation (a simulation is reproducible; it is never a release).
SIMULATION_SEED = 20240518
#: Synthetic categories of a grouping column that has no declared domain.
_SYNTHETIC_CELLS = 5
_MAX_SIMULATED_ROWS = 1_000_000
#: Synthetic values of a column without bounds (private bounds are what is estimated).
_MADE_UP_RANGE = (1.0, 1000.0)


def synthetic_table(spec: ReleaseSpec, schema: Mapping[str, str], rows: int) -> Any:
    """A PyArrow table shaped like the query needs, made only from public choices: ``rows``
    rows; the value column uniform within the bounds (within [1, 1000] for private bounds,
    which have none); each grouping column cycling through its declared domain (or five
    made-up cells); one row per privacy unit."""
    import pyarrow as pa

    rng = np.random.default_rng(SIMULATION_SEED)
    data: dict[str, Any] = {}
    if spec.privacy_unit is not None:
        ids = np.arange(rows, dtype=np.int64)
        data[spec.privacy_unit] = (ids if schema.get(spec.privacy_unit) == "numeric"
                                   else [f"unit-{i}" for i in ids])
    typed = typed_domain(spec, schema) or {}
    for column in spec.groups:
        values: list[Any] = typed.get(column) or _made_up_cells(schema.get(column, "string"))
        data[column] = [values[i % len(values)] for i in range(rows)]
    if RELEASE_KINDS[spec.kind].columns == "one":  # the value column
        low, high = spec.bounds if isinstance(spec.bounds, tuple) else _MADE_UP_RANGE
        data[spec.columns[0]] = rng.uniform(low, high, rows)
    if not data:
        data["row"] = np.arange(rows, dtype=np.int64)
    return pa.table(data)


def _made_up_cells(kind: str) -> list[Any]:
    if kind == "numeric":
        return list(range(_SYNTHETIC_CELLS))
    if kind == "boolean":
        return [False, True]
    return [f"cell {chr(ord('A') + i)}" for i in range(_SYNTHETIC_CELLS)]


def simulate(spec: ReleaseSpec, schema: Mapping[str, str], rows: object) -> dict[str, Any]:
    """The release run on :func:`synthetic_table` with a seeded throwaway accountant: what
    accuracy to expect (σ, noise std, interval widths). Spends nothing from any ledger; the
    result is marked NOT private (``secure`` false).

    Raises:
        ApproxDPError: bad input (``rows`` out of range, a query the API refuses).
    """
    from approxdp.releases import PrivateTable

    n = integer("rows", rows, 1, _MAX_SIMULATED_ROWS)
    table = PrivateTable(synthetic_table(spec, schema, n), budget=(spec.epsilon, spec.delta),
                         seed=SIMULATION_SEED, **table_options(spec))
    result = run_query(table, spec, schema)
    return {"rows": n, "result": release_dict(result), "explain": result.explain()}


def release_events(spec: ReleaseSpec, schema: Mapping[str, str]) -> list[PrivacyEvent]:
    """The events the release will spend, from a run on a synthetic table with a throwaway
    accountant: what a release spends depends only on its public parameters (the query, ε, δ,
    bounds, domain), never on the data. A small table first; one that private bounds would
    refuse as too small (their refusal is a check of the data, not of the events) is grown
    until the run goes through."""
    from approxdp.releases import PrivateTable

    for rows in (50, 10_000, _MAX_SIMULATED_ROWS):
        probe = PrivacyAccountant(budget=(1e9, 0.5), composition="basic", adaptivity="fixed")
        table = PrivateTable(synthetic_table(spec, schema, rows), accountant=probe,
                             seed=SIMULATION_SEED, **table_options(spec))
        try:
            run_query(table, spec, schema)
        except InsufficientDataError:
            if rows == _MAX_SIMULATED_ROWS:
                raise
            continue
        break
    return [record.event for record in probe.history()]


def small_data_advice(spec: ReleaseSpec, schema: Mapping[str, str], rows: object) -> list[str]:
    """The API's small-data advice for this query at ``rows`` assumed rows — a public guess,
    never the data: the release is run on :func:`synthetic_table` with a throwaway accountant,
    and what it would warn (:class:`~approxdp.errors.SmallDataWarning`: most groups below the
    partition-selection threshold) or refuse (:class:`~approxdp.errors.InsufficientDataError`:
    private bounds with too few values) is returned as the exceptions' ``advice`` — words and
    public parameters only (thresholds follow from ε and δ), no number from any data.

    Raises:
        ApproxDPError: ``rows`` out of range, or a query the API refuses.
    """
    from approxdp.releases import PrivateTable

    n = integer("rows", rows, 1, _MAX_SIMULATED_ROWS)
    probe = PrivacyAccountant(budget=(1e9, 0.5), composition="basic", adaptivity="fixed")
    table = PrivateTable(synthetic_table(spec, schema, n), accountant=probe,
                         seed=SIMULATION_SEED, **table_options(spec))
    found: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SmallDataWarning)
        try:
            run_query(table, spec, schema)
        except InsufficientDataError as exc:
            found.append(exc.advice)
    found += [w.message.advice for w in caught if isinstance(w.message, SmallDataWarning)]
    return [text.removesuffix("; nothing was spent") for text in dict.fromkeys(found) if text]

