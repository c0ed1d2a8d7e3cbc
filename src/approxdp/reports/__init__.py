"""What the front ends show: the JSON-shaped reports shared by the command line
(:mod:`approxdp.cli`) and the browser UI (:mod:`approxdp.web`).

A report is a plain ``dict`` (its shape documented in ``docs/cli.md``), built once here, so the
command line's ``--json``, its tables and the browser's pages cannot disagree. Nothing here
imports Click, Rich or Shiny.

- :mod:`.formatting` — numbers for tables (:func:`~.formatting.fmt`), JSON-safe values, the
  schema version of every shape;
- :mod:`.releases` — release results, budgets and ledger spends as JSON objects, cells as CSV,
  typed domain values;
- :mod:`.calibration` — every calibration method's σ and its exact verdict (``calibrate``);
- :mod:`.composition` — total privacy of releases under each rule (``compose``);
- :mod:`.dpsgd` — a DP-SGD run under every accountant (``dpsgd``);
- :mod:`.ledger` — a ledger file's budget, spends and status (``ledger``).
"""

from __future__ import annotations

__all__: list[str] = []
