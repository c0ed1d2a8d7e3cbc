"""Private releases versus the same plain DuckDB GROUP BY, measured in the same run.

Generates a 10^7-row synthetic Parquet table in a temporary directory (about 10 rows per
privacy unit; two categorical group columns with 20 × 8 levels; a numeric value), then times,
each in a fresh subprocess (so peak memory is per phase), the median of ``--repeat`` runs:

- ``plain``:    SELECT a, b, count(*), sum(clamp(v)) ... GROUP BY a, b  (not private)
- ``private``:  PrivateTable.release([Histogram(a, b), Sum(v, by=(a, b))]) over the declared
                domain (row-level privacy), noise and accounting included
- ``bounded``:  the same with privacy_unit='uid', 2 partitions per unit, 5 rows per partition
- ``naive``:    bounding written as row_number() over random() (for scale; one run)

Usage: ``.venv/bin/python benchmarks/release.py [--rows 10000000] [--repeat 3] [--naive]
[--phases plain,private,bounded]``
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

A_LEVELS = [f"region-{i:02d}" for i in range(20)]
B_LEVELS = [f"segment-{i}" for i in range(8)]


def generate(path: Path, rows: int) -> None:
    """Write the synthetic table with DuckDB (uids in random order)."""
    import duckdb

    units = max(rows // 10, 1)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"""
        COPY (SELECT (hash(i) % {units})::BIGINT AS uid,
                     'region-' || lpad(((hash(i * 7) % 20))::VARCHAR, 2, '0') AS a,
                     'segment-' || ((hash(i * 13) % 8))::VARCHAR AS b,
                     ((hash(i * 17) % 100000) / 1000.0)::DOUBLE AS v
              FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)
    """)


def _phase(name: str, path: str, repeat: int) -> dict[str, float]:
    import duckdb

    from approxdp.releases.session import PrivateTable
    from approxdp.releases.specs import Histogram, Sum

    times = []
    domain = {"a": A_LEVELS, "b": B_LEVELS}
    plain_sql = (
        f"SELECT a, b, count(*), sum(greatest(least(v, 50.0), 0.0)) "
        f"FROM read_parquet('{path}') GROUP BY a, b"
    )
    naive_sql = f"""
        WITH r0 AS (SELECT *, random() AS rr FROM read_parquet('{path}')),
        r1 AS (SELECT *, row_number() OVER (PARTITION BY uid, a, b ORDER BY rr) AS rn FROM r0),
        r2 AS (SELECT *, dense_rank() OVER (PARTITION BY uid ORDER BY hash(a, b, 99)) AS pr
               FROM r1 WHERE rn <= 5)
        SELECT a, b, count(*), sum(greatest(least(v, 50.0), 0.0)) FROM r2 WHERE pr <= 2
        GROUP BY a, b"""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    for _ in range(repeat if name != "naive" else 1):
        start = time.perf_counter()
        if name == "plain":
            con.sql(plain_sql).fetchall()
        elif name == "naive":
            con.sql(naive_sql).fetchall()
        else:
            unit = {"privacy_unit": "uid", "max_partitions": 2, "max_rows_per_partition": 5}
            table = PrivateTable(path, budget=(100.0, 0.5), seed=1,
                                 **(unit if name == "bounded" else {}))  # type: ignore[arg-type]
            table.release([Histogram(("a", "b"), domain), Sum("v", (0.0, 50.0), ("a", "b"),
                                                              domain)],
                          epsilon=1.0, delta=1e-6)
        times.append(time.perf_counter() - start)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": statistics.median(times), "peak_rss_mib": peak_mib}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--naive", action="store_true", help="also time the naive bounding")
    parser.add_argument("--phases", default="plain,private,bounded",
                        help="comma-separated phases to time (plain always runs first)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(_phase(args.phase, args.path, args.repeat)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.parquet"
        generate(path, args.rows)
        print(f"{args.rows:,} rows, {path.stat().st_size / 2**20:.0f} MiB Parquet; "
              f"median of {args.repeat} runs", flush=True)
        chosen = [p for p in args.phases.split(",") if p and p != "plain"]
        phases = ["plain", *chosen] + (["naive"] if args.naive else [])
        results = {}
        for name in phases:
            out = subprocess.run(
                [sys.executable, __file__, "--phase", name, "--path", str(path),
                 "--repeat", str(args.repeat)],
                check=True, capture_output=True, text=True,
            )
            results[name] = json.loads(out.stdout)
            base = results["plain"]["seconds"]
            r = results[name]
            print(f"{name:8s} {r['seconds']:8.3f} s  {r['seconds'] / base:6.2f}× plain  "
                  f"peak RSS {r['peak_rss_mib']:7.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
