"""``approxdp serve``: the explorer and release wizard in the browser (Shiny for Python).

Four pages over the same functions as the command line: **Calibrate** (every method's σ, the
privacy profile, the classical formulas' failure region), **Compose / DP-SGD** (every rule and
accountant, ε against steps, the noise for a target), **Ledger** (read-only: spends, what is
left, the burn-down) and the **Release wizard** (a data file fixed at start → privacy unit and
query → simulated accuracy, spending nothing → an explicit, costed spend through the ledger →
downloads). The parts:

- :mod:`.config` — what the server may touch (data files, ledger, host), fixed at start;
- :mod:`.guard` — the Host/Origin check that keeps other web sites' pages out;
- :mod:`.forms` — text fields read into numbers with the API's typed errors;
- :mod:`.pages` and :mod:`.wizard` — what each page computes, testable without a browser;
- :mod:`.figures` — the Matplotlib figures (PNG, sent inline: nothing from the internet);
- :mod:`.app` — the Shiny user interface and server, imported only when the server starts.
"""

from __future__ import annotations

__all__: list[str] = []
