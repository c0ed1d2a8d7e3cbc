"""``release batch QUERY_FILE``: several queries of one file — of any kind of the registry
:data:`~approxdp.releases.kinds.RELEASE_KINDS` — released as one jointly calibrated plan (like
:meth:`PrivateTable.release <approxdp.releases.session.PrivateTable.release>`), one spend for
the whole batch, each query's share of it stated with its result. The spec format is in
:mod:`approxdp.cli.query_spec`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from approxdp.accounting import PrivacyAccountant
from approxdp.cli.output import (
    JSON_SCHEMA_VERSION,
    emit,
    interruptible,
    jsonable,
    progress,
    safe_text,
)
from approxdp.cli.query_spec import load_spec
from approxdp.cli.release_views import render_budget, render_release, render_shares
from approxdp.cli.row_options import transform_rows
from approxdp.errors import InvalidParameterError
from approxdp.reports.ledger import accountant_budget
from approxdp.reports.releases import release_dict

__all__ = ["run_batch"]

#: Makes the accountant: (ledger, budget, composition, the batch's own (ε, δ)).
AccountantFactory = Callable[
    [Path | None, tuple[float, float] | None, str | None, tuple[float, float]],
    PrivacyAccountant,
]


def run_batch(
    spec_path: Path, *, epsilon: float | None, delta: float | None, level: float | None,
    budget: tuple[float, float] | None, ledger: Path | None, composition: str | None,
    seed: int | None, allow_seeded_ledger: bool, output: Path | None, show: int,
    as_json: bool, exact_diagnostics: bool, make_accountant: AccountantFactory,
    engine: str | None = None, ledger_sub: str | None = None,
) -> None:
    """Release every query of the spec at ``spec_path`` as one plan (see the module), over
    the spec's file after its ``derive`` columns and ``where`` filters; ``engine`` (the
    command's ``--engine``) wins over the spec's; ``ledger_sub``: the sub-budget that pays
    (``--ledger-sub``)."""
    from approxdp.releases.session import PrivateTable

    spec = load_spec(spec_path)
    if spec.file is None:
        raise InvalidParameterError(f"spec {str(spec_path)!r} names no data: add file = \"...\"")
    eps = epsilon if epsilon is not None else spec.epsilon
    dlt = delta if delta is not None else spec.delta
    if eps is None or dlt is None:
        raise InvalidParameterError(
            "a batch needs its budget: epsilon and delta in the spec, or -e and -d"
        )
    if output is not None and not output.name.lower().endswith(".json"):
        raise InvalidParameterError(f"--output of a batch must end in .json, got {str(output)!r}")
    accountant = make_accountant(ledger, budget, composition, (eps, dlt))
    try:
        pays = accountant if ledger_sub is None else accountant.sub(ledger_sub)
        with progress(f"Releasing {len(spec.queries)} private queries from "
                      f"{Path(spec.file).name}"), \
                interruptible(lambda: pays.remaining().count):
            settings = {**spec.table, **({"engine": engine} if engine is not None else {})}
            table = transform_rows(
                PrivateTable(spec.file, accountant=pays, seed=seed,
                             allow_seeded_ledger=allow_seeded_ledger, **settings),
                derive=spec.derive, where=spec.where,
                derive_label=lambda name: f"spec derive.{name} = ",
                where_label=lambda i: "spec where" if len(spec.where) == 1 else
                f"spec where[{i}]")
            allocated = table.allocate(table.plan(list(spec.queries), spec.weights),
                                       epsilon=eps, delta=dlt)
            results = table.execute(allocated,
                                    level=level if level is not None else spec.level)
        status = accountant_budget(pays)
    finally:
        accountant.close()
    data: dict[str, Any] = {
        "command": "release batch", "schema_version": JSON_SCHEMA_VERSION,
        "spec": str(spec_path), "file": spec.file, "epsilon": eps, "delta": dlt,
        "derive": dict(spec.derive), "where": list(spec.where),
        "results": [{**release_dict(r, exact_diagnostics=exact_diagnostics), "share": share}
                    for r, share in zip(results, allocated.shares, strict=True)],
        "budget": status,
        "ledger": str(ledger) if ledger is not None else None,
        "ledger_sub": ledger_sub,
    }

    def render(console: Console) -> None:
        spent = any(r["mechanism"] != "exact" for r in data["results"])
        console.print(
            f"[bold]Batch of {len(data['results'])} queries released as one plan[/]: "
            + (f"budget spent ε = {eps:g}, δ = {dlt:g} in one spend, shared by the queries "
               "(joint calibration)" if spent else
               "nothing spent (no query needs noise)")
        )
        for result in data["results"]:
            render_release(console, result, show, budget_line=False)
        render_shares(console, data["results"], eps, dlt)
        where = f" in ledger {safe_text(ledger)}" if ledger else " (this session)"
        if ledger_sub is not None:
            where = f" of sub-budget {safe_text(ledger_sub)!r}" + where
        render_budget(console, data["budget"], title="Budget" + where)

    emit(data, as_json, render)
    if output is not None:
        output.write_text(json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n",
                          encoding="utf-8")
