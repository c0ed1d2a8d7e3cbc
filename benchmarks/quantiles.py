"""Private quantiles: speed against plain SQL ``quantile_cont`` and accuracy against the
exponential mechanism, measured in the same run.

Speed: a synthetic Parquet table of ``--rows`` rows (default 10^7; about 10 rows per privacy
unit, a value v in [0, 100)), then, each the median of ``--repeat`` runs:

- ``plain``:    SELECT quantile_cont(v, [0.1, 0.5, 0.9]) FROM the file (not private)
- ``private``:  PrivateTable(path).quantiles('v', [0.1, 0.5, 0.9], (0, 100)) (row-level)
- ``bounded``:  the same with privacy_unit='uid' (1 node per level, 5 rows per node)

Accuracy: the quartiles of Adult's ``age`` (45,222 integers, many ties) and of 10,000
continuous lognormal values, at ε = 1, over ``--runs`` runs: approxdp's tree (δ = 1e-6;
seeded), the exponential mechanism on the sorted data (Smith 2011), written here in NumPy, at
ε = 1 per quantile (δ = 0) and at ε = 1/3 per quantile (the three sharing ε = 1), and
OpenDP's ``make_private_quantile`` and diffprivlib's ``quantile`` (the exponential mechanism
too) at ε = 1/3 per quantile when they are installed (each skipped otherwise; neither is a
dependency). Reported: mean absolute error and the share of runs within ±1.

Usage: ``.venv/bin/python benchmarks/quantiles.py [--rows 10000000] [--repeat 3] [--runs 200]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

QS = (0.25, 0.5, 0.75)


def generate(path: Path, rows: int) -> None:
    """Write the synthetic table with DuckDB."""
    import duckdb

    units = max(rows // 10, 1)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"""
        COPY (SELECT (hash(i) % {units})::BIGINT AS uid,
                     ((hash(i * 17) % 100000) / 1000.0)::DOUBLE AS v
              FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)
    """)


def speed(rows: int, repeat: int) -> None:
    """Time plain quantile_cont against the private releases."""
    import duckdb

    from approxdp import PrivateTable

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.parquet"
        generate(path, rows)
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        sql = f"SELECT quantile_cont(v, [0.1, 0.5, 0.9]) FROM read_parquet('{path}')"
        phases: dict[str, Any] = {
            "plain": lambda: con.sql(sql).fetchall(),
            "private": lambda: PrivateTable(str(path), budget=(1.0, 1e-6), seed=1).quantiles(
                "v", [0.1, 0.5, 0.9], (0, 100), epsilon=1.0, delta=1e-6),
            "bounded": lambda: PrivateTable(
                str(path), budget=(1.0, 1e-6), seed=1, privacy_unit="uid",
                max_rows_per_partition=5,
            ).quantiles("v", [0.1, 0.5, 0.9], (0, 100), epsilon=1.0, delta=1e-6),
        }
        print(f"{rows:,} rows; median of {repeat} runs", flush=True)
        base = 0.0
        for name, run in phases.items():
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            t = statistics.median(times)
            base = base or t
            print(f"{name:8s} {t:8.3f} s  {t / base:6.2f}× plain", flush=True)


def exponential_quantile(
    values: np.ndarray, q: float, bounds: tuple[float, float], epsilon: float,
    rng: np.random.Generator,
) -> float:
    """Smith 2011's exponential mechanism for the q-quantile: interval i between consecutive
    sorted values (clamped, with the bounds as ends) has score −|i − qn| and is chosen with
    probability ∝ width · exp(ε · score / 2); the output is uniform in it."""
    low, high = bounds
    x = np.concatenate([[low], np.sort(np.clip(values, low, high)), [high]])
    widths = np.diff(x)
    n = values.size
    score = -np.abs(np.arange(n + 1) - q * n)
    with np.errstate(divide="ignore"):
        logw = np.log(widths) + epsilon * score / 2.0
    logw -= logw.max()
    p = np.exp(logw)
    i = rng.choice(n + 1, p=p / p.sum())
    return float(rng.uniform(x[i], x[i + 1]))


def _opendp_quantiles(
    values: np.ndarray, bounds: tuple[float, float], epsilon: float, runs: int
) -> np.ndarray | None:
    """OpenDP's ``make_private_quantile`` (the exponential mechanism over candidates, here a
    0.25-year grid on the bounds) at ``epsilon`` per quantile; None if OpenDP is missing."""
    try:
        import opendp.prelude as dp  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        print("OpenDP not installed: its row is skipped")
        return None
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    candidates = [float(c) for c in np.arange(bounds[0], bounds[1] + 0.125, 0.25)]
    data = [float(v) for v in values]
    out = np.empty((runs, len(QS)))
    for j, q in enumerate(QS):
        def make(scale: float, q: float = q) -> Any:
            return dp.m.make_private_quantile(*space, dp.max_divergence(), candidates, q, scale)

        measurement = make(dp.binary_search_param(make, d_in=1, d_out=epsilon))
        out[:, j] = [measurement(data) for _ in range(runs)]
    return out


def accuracy(runs: int) -> None:
    """Mean absolute error on Adult's age (integers: ties) and on 10,000 continuous values."""
    import pyarrow as pa

    from approxdp.data import load_adult

    adult = load_adult()
    rng = np.random.default_rng(7)
    continuous = pa.table({"x": rng.lognormal(3.5, 0.5, 10_000)})
    for label, table, column, bounds in (
        ("Adult age (integers)", adult, "age", (0.0, 100.0)),
        ("10,000 lognormal values (continuous)", continuous, "x", (0.0, 200.0)),
    ):
        _accuracy(label, table, column, bounds, runs)


def _accuracy(label: str, table: Any, column: str, bounds: tuple[float, float],
              runs: int) -> None:
    from approxdp import PrivateTable

    values = np.asarray(table.column(column).to_numpy(), dtype=float)
    truth = np.quantile(values, QS, method="inverted_cdf")
    rows: dict[str, np.ndarray] = {}
    rows["approxdp tree, (1, 1e-6) for all three"] = np.array([
        PrivateTable(table, budget=(1.0, 1e-6), seed=s).quantiles(
            column, QS, bounds, epsilon=1.0, delta=1e-6).values for s in range(runs)
    ])
    rng = np.random.default_rng(0)
    for eps, name in ((1.0, "exp. mechanism, ε = 1 each (3 total)"),
                      (1.0 / 3, "exp. mechanism, ε = 1/3 each (1 total)")):
        rows[name] = np.array([[exponential_quantile(values, q, bounds, eps, rng) for q in QS]
                               for _ in range(runs)])
    opendp = _opendp_quantiles(values, bounds, 1.0 / 3, runs)
    if opendp is not None:
        rows["OpenDP make_private_quantile, ε = 1/3 each"] = opendp
    try:
        from diffprivlib.tools import quantile  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # not installed, or (0.6.6) broken by a newer scikit-learn
        print("diffprivlib not importable: its row is skipped")
    else:
        rows["diffprivlib quantile, ε = 1/3 each"] = np.array([
            [float(quantile(values, q, epsilon=1.0 / 3, bounds=bounds, random_state=s))
             for q in QS] for s in range(runs)
        ])
    print(f"{label}: true quartiles {np.round(truth, 3).tolist()}; {runs} runs", flush=True)
    print(f"{'method':42s} {'MAE q25/q50/q75':>26s} {'within ±1':>10s}")
    for name, est in rows.items():
        err = np.abs(est - truth)
        mae = "/".join(f"{m:.3f}" for m in err.mean(axis=0))
        print(f"{name:42s} {mae:>26s} {np.mean(err <= 1.0):10.1%}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    accuracy(args.runs)
    if not args.skip_speed:
        speed(args.rows, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
