"""Shared fixtures: one small local Spark session for the whole test run; and the markers of
the slow kinds of test.

Spark tests are skipped when PySpark or Java is missing, unless ``APPROXDP_REQUIRE_SPARK=1``
(which ``scripts/test.py`` sets, so CI fails instead of silently skipping them).

Every test that runs on Spark is marked ``spark`` (it uses the Spark session, or runs an
engine-parametrized test on Spark) and every test that drives the browser ``browser``, so a
quick local run can leave them out: ``.venv/bin/python -m pytest -m "not spark and not
browser"``. ``python3 scripts/test.py`` (CI) runs everything.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _spark_missing() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "PySpark is not installed (pip install 'approxdp[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (Spark needs Java 17+)"
    return None


def _runs_on_spark(item: pytest.Item) -> bool:
    if "spark_session" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    if any(isinstance(p, str) and p == "spark" for p in params):  # an engine's parameter
        return True  # (docs/spark.md's example asks for the session: in fixturenames then)
    return item.path.name == "test_docs.py" and any(
        isinstance(p, Path) and p.name == "spark.md" for p in params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the Spark and browser tests (see the module docstring)."""
    for item in items:
        if item.path.name == "test_spark_engine.py" or _runs_on_spark(item):
            item.add_marker(pytest.mark.spark)
        if item.path.name == "test_web_browser.py":
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def spark_session() -> Iterator[Any]:
    """A local[2] SparkSession with few shuffle partitions and small memory, shared by all."""
    reason = _spark_missing()
    if reason is not None:
        if os.environ.get("APPROXDP_REQUIRE_SPARK") == "1":
            pytest.fail(f"Spark tests are required (APPROXDP_REQUIRE_SPARK=1) but {reason}")
        pytest.skip(reason)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    # Python workers: this interpreter (with approxdp), and the test modules importable, since
    # cell functions defined in tests are pickled by reference
    os.environ["PYSPARK_PYTHON"] = sys.executable
    here = Path(__file__).resolve().parent  # tests/ and its folders, as pytest imports them
    folders = [str(here), *(str(d) for d in sorted(here.iterdir()) if d.is_dir())]
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (*folders, os.environ.get("PYTHONPATH", "")) if p
    )
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("approxdp-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()
