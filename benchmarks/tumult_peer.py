"""Peer figure: Tumult Analytics' private count per group on the same table and Spark config.

Tumult Analytics is NOT a dependency of approxdp. It needs PySpark < 3.6, so it lives in a
separate throwaway environment, e.g.::

    python3 -m venv /tmp/tumult && /tmp/tumult/bin/pip install tmlt.analytics
    /tmp/tumult/bin/python benchmarks/tumult_peer.py --path synthetic.parquet

(``benchmarks/spark.py --path PATH`` generates the table there and keeps it). This script imports
neither approxdp nor anything of this repository. It times, best of ``--repeat`` and
alternating: the plain ``groupBy("a", "b").count().collect()`` on that environment's Spark,
and Tumult's ``groupby(KeySet).count()`` over the same declared domain (row-level privacy,
(ε, δ) = (1, 1e-6) when ``ApproxDPBudget`` exists, else ρ-zCDP), session set-up included.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

A_LEVELS = [f"region-{i:02d}" for i in range(20)]
B_LEVELS = [f"segment-{i}" for i in range(8)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import tempfile

    from pyspark.sql import SparkSession
    from tmlt import analytics as ta

    warehouse = tempfile.mkdtemp(prefix="tumult-warehouse-")  # Tumult writes temp tables
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("tumult-peer")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.parquet(args.path)
    keys = ta.KeySet.from_dict({"a": A_LEVELS, "b": B_LEVELS})
    if hasattr(ta, "ApproxDPBudget"):
        total, each, label = ta.ApproxDPBudget(1e6, 0.5), ta.ApproxDPBudget(1.0, 1e-6), "(1, 1e-6)"
    else:  # pragma: no cover - older Tumult
        total, each, label = ta.RhoZCDPBudget(1e6), ta.RhoZCDPBudget(0.5), "rho=0.5"

    def plain() -> object:
        return df.groupBy("a", "b").count().collect()

    def tumult() -> object:
        session = ta.Session.from_dataframe(
            privacy_budget=total, source_id="t", dataframe=df, protected_change=ta.AddOneRow()
        )
        query = ta.QueryBuilder("t").groupby(keys).count()
        return session.evaluate(query, privacy_budget=each).collect()

    plain()
    tumult()
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        plain()
        t1 = time.perf_counter()
        rows = tumult()
        times.append((t1 - t0, time.perf_counter() - t1))
    base = min(p for p, _ in times)
    peer = min(t for _, t in times)
    assert len(rows) == len(A_LEVELS) * len(B_LEVELS)  # type: ignore[arg-type]
    import pyspark
    import tmlt.analytics

    version = getattr(tmlt.analytics, "__version__", "?")
    print(f"pyspark {pyspark.__version__}, tmlt.analytics {version}, budget {label}")
    print(f"spark plain    {base:8.3f} s  1.00×")
    print(f"tumult count   {peer:8.3f} s  {peer / base:5.2f}× spark plain")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
