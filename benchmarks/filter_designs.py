"""What each accounting design admits: the least budget ε (at δ = 1e-6) under which a ledger
admits the history of issue 21 — 10 Gaussian releases (σ = 5), 10 Laplace releases (b = 10)
and a DP-SGD run (q = 0.01, σ = 1) of T steps — for T from 0 to 1000, and the figure of the
guide page "Adaptive analysts and privacy filters" (``docs/img/filter-designs.png``).

Usage: ``.venv/bin/python benchmarks/filter_designs.py [--out docs/img/filter-designs.png]``
(about a minute). Designs, each printed as a ratio to the PLD of the sequence declared in
advance (the baseline, measured in the same run):

- the PLD of the whole sequence declared in advance (valid only if it really was);
- the default ledger (the ``gdp`` privacy filter) with the DP-SGD run committed first, then
  the releases spent one at a time (valid under full adaptivity);
- the default ledger with every event spent one at a time, nothing committed (valid; each
  DP-SGD step after the first spend costs its Gaussian's μ²);
- the same with the whole budget a Rényi share (``rdp_share=budget``: a Rényi filter at the
  default orders, δ split between them; valid), every event spent one at a time.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from approxdp import GaussianEvent, LaplaceEvent, PrivacyAccountant, pld_epsilon
from approxdp.errors import BudgetExceededError
from approxdp.events import PrivacyEvent, SubsampledEvent

DELTA = 1e-6
STEP = SubsampledEvent(GaussianEvent(sigma=1.0), 0.01)
RELEASES: list[tuple[PrivacyEvent, int]] = [(GaussianEvent(sigma=5.0), 10),
                                            (LaplaceEvent(scale=10.0), 10)]


def fits(epsilon: float, steps: int, commit_first: bool, rdp: bool = False) -> bool:
    budget = (epsilon, DELTA)
    acc = PrivacyAccountant(budget=budget, rdp_share=budget if rdp else None)
    try:
        if commit_first and steps:
            acc.commit([(STEP, steps)], label="DP-SGD run")
        for event, count in RELEASES:
            for _ in range(count):
                acc.spend(event)
        for _ in range(steps):
            acc.spend(STEP)
    except BudgetExceededError:
        return False
    return True


def least(steps: int, commit_first: bool, low: float, rdp: bool = False) -> float:
    """The least budget ε admitting the history, to 0.1 % (bisection)."""
    high = 1.2 * low
    while not fits(high, steps, commit_first, rdp):
        low, high = high, 2.0 * high
    while high - low > 1e-3 * high:
        mid = 0.5 * (low + high)
        low, high = (low, mid) if fits(mid, steps, commit_first, rdp) else (mid, high)
    return high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the figure (PNG) here")
    args = parser.parse_args()
    steps_list = [0, 100, 200, 400, 600, 800, 1000]
    rows = []
    print("     T   PLD declared   committed (x PLD)   one at a time (x PLD)   Rényi share, one "
          "at a time (x PLD)")
    for steps in steps_list:
        history = [*RELEASES, *([(STEP, steps)] if steps else [])]
        declared = float(pld_epsilon(history, DELTA, bracket=False).epsilon)
        committed = least(steps, True, declared)
        plain = least(steps, False, declared)
        renyi = least(steps, False, declared, rdp=True)
        rows.append((steps, declared, committed, plain, renyi))
        print(f"{steps:6d} {declared:14.4f} {committed:10.4f} ({committed / declared:5.3f}x) "
              f"{plain:12.2f} ({plain / declared:6.1f}x) {renyi:12.4f} "
              f"({renyi / declared:5.3f}x)")
    if args.out is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7.0, 4.2), dpi=120)
        xs = [r[0] for r in rows]
        ax.plot(xs, [r[1] for r in rows], "o-", label="PLD, declared in advance (not a filter)")
        ax.plot(xs, [r[2] for r in rows], "s-",
                label="default ledger, DP-SGD run committed (filter)")
        ax.plot(xs, [r[3] for r in rows], "^-",
                label="default ledger, one event at a time (filter)")
        ax.plot(xs, [r[4] for r in rows], "d-",
                label="Rényi share = budget, one event at a time (filter)")
        ax.set_yscale("log")
        ax.set_xlabel("DP-SGD steps T (q = 0.01, σ = 1), after 10 Gaussian + 10 Laplace")
        ax.set_ylabel("least budget ε admitting it (δ = 1e-6)")
        ax.set_title("The budget each design needs for the same history")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
