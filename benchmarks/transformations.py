"""Filters, derived columns and public joins: their speed against the same release without
them, and their accuracy against the truth, measured in the same run.

Speed: a synthetic Parquet table of ``--rows`` rows (default 10^7: a value v in [0, 100), a
category g of 50 values, a key r of 1,000 values), then, each the median of ``--repeat`` runs
of a mean of v per g over a declared domain (row-level, DuckDB):

- ``plain``:     the release on the table itself (the baseline)
- ``filter``:    the same after ``filter("v > 10 AND g <> 'g7'")``
- ``derived``:   the mean of ``with_column("w", "round(v * 1.5, 1)", bounds=(0, 150))``
- ``joined``:    the same after ``join_public`` of a 1,000-row lookup on r

printed as seconds and ratios to ``plain``.

Accuracy: the mean hours per week of Adult's women over 30 (a filter) and the mean body mass of
the Gentoo penguins (a filter on a 344-row CSV with "NA" values, cast) over ``--runs`` seeded
runs per ε: RMSE and largest error against the truth, and how often the 95 % interval covered
it. The penguins need the ``palmerpenguins`` package (a test dependency; skipped without it).

Usage: ``.venv/bin/python benchmarks/transformations.py [--rows 10000000] [--repeat 3]
[--runs 30]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def generate(path: Path, rows: int) -> None:
    """Write the synthetic table with DuckDB."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"""
        COPY (SELECT ((hash(i * 17) % 100000) / 1000.0)::DOUBLE AS v,
                     'g' || (hash(i * 31) % 50)::VARCHAR AS g,
                     (hash(i * 7) % 1000)::BIGINT AS r
              FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)
    """)


def _time(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def speed(rows: int, repeat: int) -> None:
    import pyarrow as pa

    from approxdp import PrivateTable

    domain = {"g": [f"g{i}" for i in range(50)]}
    lookup = pa.table({"r": list(range(1000)), "weight": [1.0 + i / 1000 for i in range(1000)]})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.parquet"
        generate(path, rows)

        def table() -> PrivateTable:
            return PrivateTable(str(path), budget=(1e9, 0.5), seed=1)

        cases: dict[str, Callable[[], Any]] = {
            "plain": lambda: table().mean("v", (0, 100), by=["g"], domain=domain,
                                          epsilon=1.0, delta=1e-6),
            "filter": lambda: table().filter("v > 10 AND g <> 'g7'").mean(
                "v", (0, 100), by=["g"], domain=domain, epsilon=1.0, delta=1e-6,
                outside_domain="drop"),
            "derived": lambda: table().with_column("w", "round(v * 1.5, 1)", bounds=(0, 150))
            .mean("w", by=["g"], domain=domain, epsilon=1.0, delta=1e-6),
            "joined": lambda: table().join_public(lookup, on="r").mean(
                "weight", (1, 2), by=["g"], domain=domain, epsilon=1.0, delta=1e-6),
        }
        base = None
        print(f"speed: {rows:,} rows, median of {repeat} (DuckDB, mean per g over 50 cells)")
        for name, run in cases.items():
            seconds = _time(run, repeat)
            base = base or seconds
            print(f"  {name:8s} {seconds:8.3f} s   {seconds / base:5.2f}x plain")


def _accuracy(label: str, truth: float, releases: list[Any]) -> None:
    err = np.array([float(r.value) - truth for r in releases])
    covered = sum(int(r.ci_low[0] <= truth <= r.ci_high[0]) for r in releases)
    std = np.mean([r.std[0] for r in releases])
    print(f"  {label}: RMSE {np.sqrt(np.mean(err**2)):.4g}, largest |error| "
          f"{np.max(np.abs(err)):.4g}, mean reported std {std:.4g}, 95 % intervals covered "
          f"{covered}/{len(releases)}")


def accuracy(runs: int) -> None:
    from approxdp import PrivateTable
    from approxdp.data import load_adult

    adult = load_adult()
    age, sex, hours = (np.asarray(adult[c]) for c in ("age", "sex", "hours-per-week"))
    mask = (age > 30) & (sex == "Female")
    truth = float(hours[mask].mean())
    print(f"accuracy: Adult, women over 30 ({int(mask.sum()):,} rows), mean hours per week "
          f"{truth:.4f}, bounds [0, 100], δ = 1e-6, {runs} seeds")
    for eps in (0.1, 1.0):
        _accuracy(f"ε = {eps:g}", truth, [
            PrivateTable(adult, budget=(eps, 1e-6), seed=s)
            .filter("age > 30 AND sex = 'Female'")
            .mean("hours-per-week", (0, 100), epsilon=eps, delta=1e-6) for s in range(runs)])
    try:
        import palmerpenguins
    except ImportError:
        print("accuracy: penguins skipped (pip install palmerpenguins)")
        return
    import pyarrow.csv as pcsv

    path = Path(os.path.dirname(palmerpenguins.__file__)) / "data" / "penguins.csv"
    pen = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(null_values=["NA"]))
    mass = np.asarray(pen["body_mass_g"].to_numpy(zero_copy_only=False), dtype=float)
    gentoo = (np.asarray(pen["species"]) == "Gentoo") & ~np.isnan(mass)
    truth = float(np.clip(mass[gentoo], 2500, 6500).mean())
    print(f"accuracy: penguins, Gentoo ({int(gentoo.sum())} with a mass), mean body mass "
          f"{truth:.2f} g, bounds [2500, 6500], from the CSV, {runs} seeds")
    for eps in (0.5, 1.0, 2.0):
        _accuracy(f"ε = {eps:g}", truth, [
            PrivateTable(path, budget=(eps, 1e-6), seed=s, casts={"body_mass_g": "double"})
            .filter("species = 'Gentoo'")
            .mean("body_mass_g", (2500, 6500), epsilon=eps, delta=1e-6) for s in range(runs)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    speed(args.rows, args.repeat)
    accuracy(args.runs)


if __name__ == "__main__":
    main()
