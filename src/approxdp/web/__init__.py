"""``approxdp serve``: the explorer and release wizard in the browser (Shiny for Python), a
front end beside the command line (:mod:`approxdp.cli`), over the same reports
(:mod:`approxdp.reports`).

Four pages over the same functions as the command line: **Calibrate** (every method's σ, the
privacy profile, the classical formulas' failure region), **Compose / DP-SGD** (every rule and
accountant, ε against steps, the noise for a target), **Ledger** (read-only: spends, what is
left, the burn-down) and the **Release wizard** (a data file fixed at start → privacy unit and
query → simulated accuracy, spending nothing → an explicit, costed spend through the ledger →
downloads). The parts:

- :mod:`.config` — what the server may touch (data files, ledger, host), fixed at start;
- :mod:`.guard` — the Host/Origin check that keeps other web sites' pages out;
- :mod:`.forms` — text fields read into numbers with the API's typed errors, and the
  :class:`~.forms.Outcome` of a page's computation;
- :mod:`.pages` — one module per page: what it computes, its layout and its outputs;
- :mod:`.wizard_steps` — what the release wizard computes, step by step (its form:
  :mod:`.wizard_spec`; simulation: :mod:`.wizard_simulation`; review: :mod:`.wizard_review`);
- :mod:`.widgets` — the pages' shared Shiny pieces (tables, fields, style sheet);
- :mod:`.figures` — the Matplotlib figures (PNG, sent inline: nothing from the internet);
- :mod:`.app` — the Shiny app, imported only when the server starts.

Nothing here imports the command line; Shiny loads only with :mod:`.app`, :mod:`.pages` and
:mod:`.widgets`.
"""

from __future__ import annotations

__all__: list[str] = []
