"""The release wizard's review: the whole query and its cost, shown before the spend.

Step 4 of :mod:`~approxdp.web.wizard_steps`: :func:`query_rows` (statistic, columns, bounds,
domain or how cells are chosen without one, unit, ε, δ — public choices only) and
:func:`cost_preview` (what the release will spend from the ledger and whether it fits).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from approxdp.accounting import PrivacyAccountant, read_ledger_settings
from approxdp.releases.kinds import RELEASE_KINDS, KindInputs
from approxdp.reports.ledger import rdp_share_dict
from approxdp.reports.releases import budget_dict
from approxdp.web.wizard_simulation import release_events, small_data_advice
from approxdp.web.wizard_spec import ReleaseSpec, schema_of

__all__ = ["PARTITION_SELECTION", "cost_preview", "query_rows"]

#: What the review says of a query without a declared domain (issue 23 §7).
PARTITION_SELECTION = (
    "none: cells are chosen by DP partition selection — a group appears only if its noisy "
    "count clears a threshold set by ε and δ, so small groups are left out (and nothing says "
    "they exist); type the domain to release every value you list, zeros included"
)


def query_rows(spec: ReleaseSpec) -> list[tuple[str, str]]:
    """The whole query, as the review shows it before the spend: statistic, columns, bounds,
    quantiles and their tree's shape, domain (or how cells are chosen without one), privacy
    unit, ε, δ, level.
    Everything here is public: the form's choices, never the data."""
    entry = RELEASE_KINDS[spec.kind]
    rows: list[tuple[str, str]] = [("statistic", f"{spec.kind}: {entry.summary}")]
    if spec.columns:
        rows.append(("count over" if entry.columns == "many" else "value column",
                     ", ".join(spec.columns)))
    if spec.casts:
        rows.append(("converted to numbers", ", ".join(spec.casts)
                     + " (what is not a number becomes missing)"))
    if entry.bounds:
        if spec.bounds == "private":
            bounds = ("estimated privately first, from 20 % of this ε and δ (two spends; "
                      "refused before any spend if the data are too few)")
        elif spec.bounds is None:
            bounds = "none"
        else:
            bounds = f"[{spec.bounds[0]:g}, {spec.bounds[1]:g}] (values are clamped to them)"
        rows.append(("bounds", bounds))
    if entry.qs:
        rows.append(("quantiles", ", ".join(f"{q:g}" for q in spec.qs)))
    if entry.tree:
        tree = KindInputs(bins=spec.bins, branching=spec.branching).tree()
        given = spec.bins is not None or spec.branching is not None
        rows.append(("quantile tree", f"{tree.bins} leaves, branching {tree.branching}"
                     + ("" if given else " (the default)")))
    if spec.by:
        rows.append(("group by", ", ".join(spec.by)))
    if entry.domain and spec.groups:
        if spec.domain:
            rows.append(("domain", "; ".join(f"{c} = {', '.join(v)}"
                                             for c, v in spec.domain.items())))
            rows.append(("rows outside the domain", "drop them" if spec.outside_domain == "drop"
                         else "refuse the release"))
        else:
            rows.append(("domain", PARTITION_SELECTION))
    unit = ("each row" if spec.privacy_unit is None else
            f"{spec.privacy_unit} (at most {spec.max_partitions} cell(s), "
            f"{spec.max_rows_per_partition} row(s) per cell)")
    rows += [
        ("privacy unit", unit),
        ("neighbouring", "add or remove one unit" if spec.neighbouring == "add-remove"
         else "replace one unit"),
        ("ε", f"{spec.epsilon:g}"),
        ("δ", f"{spec.delta:g}"),
        ("confidence level", f"{spec.level:g}"),
        ("data file", spec.file.label),
    ]
    return rows


def cost_preview(spec: ReleaseSpec, ledger: Path, schema: Mapping[str, str] | None = None,
                 rows: object = None) -> dict[str, Any]:
    """What the release will spend, what the ledger has left, and whether it fits; with
    ``rows`` (the assumed number of rows, a public guess), the small-data advice at that size
    (:func:`~approxdp.web.wizard_simulation.small_data_advice`, under ``"small_data"``).

    The check plans the release's own events (those a run on synthetic data spends: they
    depend only on public parameters) against the ledger, under its filter or rule, exactly
    as the release itself will be charged. Nothing here reads the data.
    """
    shape = schema_of(spec.file) if schema is None else schema
    advice = [] if rows is None else small_data_advice(spec, shape, rows)
    accountant = PrivacyAccountant(ledger=ledger)
    settings = read_ledger_settings(ledger)
    try:
        pays = accountant if spec.ledger_sub is None else accountant.sub(spec.ledger_sub)
        events = release_events(spec, shape)
        now = pays.remaining()
        plan = pays.plan(events)
        share = rdp_share_dict(pays.rdp_share)
    finally:
        accountant.close()
    return {"epsilon": spec.epsilon, "delta": spec.delta, "ledger": str(ledger),
            "composition": settings.composition, "now": budget_dict(now), "fits": plan.fits,
            "reason": plan.reason, "after": budget_dict(plan.status_after),
            "query": query_rows(spec), "small_data": advice, "rdp_share": share,
            "ledger_sub": spec.ledger_sub}
