"""Spark table handles, the translation of Spark errors and the reading of paths, for
:mod:`approxdp.engines.spark` (PySpark is imported only inside the functions)."""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from approxdp.engines.base import is_glob
from approxdp.errors import DataError, MissingDependencyError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


__all__ = ["SparkTable", "is_spark_dataframe", "read_path", "require_pyspark", "spark_errors",
           "type_name"]

INSTALL_HINT = "pip install 'approxdp[spark]'"
CSV_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")
INTEGER_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "BooleanType")
NUMERIC_TYPES = ("FloatType", "DoubleType", "DecimalType", *INTEGER_TYPES[:-1])
STRING_TYPES = ("StringType", "VarcharType", "CharType")


def require_pyspark() -> None:
    try:
        import pyspark.sql  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"the Spark engine needs PySpark, which is not installed: {INSTALL_HINT}"
        ) from exc


def spark_errors() -> tuple[type[BaseException], ...]:
    """The exceptions PySpark raises about a query (its own, and the JVM's through Py4J)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JError)


def is_spark_dataframe(source: object) -> TypeGuard[DataFrame]:
    """Whether ``source`` is a PySpark DataFrame (checked without importing PySpark)."""
    return any(
        cls.__module__.startswith("pyspark.sql") and cls.__name__ == "DataFrame"
        for cls in type(source).__mro__
    )


@dataclass(frozen=True)
class SparkTable:
    """A Spark-backed table handle: a DataFrame and where it came from."""

    df: DataFrame
    description: str


def type_name(data_type: object) -> str:
    return type(data_type).__name__


def read_path(spark: SparkSession, path: str) -> DataFrame:
    """Read a CSV or Parquet file, a glob, or a (Hive-)partitioned Parquet folder with
    ``spark``; a missing local file or an unknown format is a ``DataError``."""
    lower = path.lower()
    local = "://" not in path
    if local and is_glob(path) and not glob.glob(path, recursive=True):
        raise DataError(f"no file matches the pattern {path!r}")
    if local and not is_glob(path) and not Path(path).exists():
        raise DataError(f"data file not found: {path!r}")
    reader = spark.read
    if is_glob(path):  # keep the partition columns of key=value folders, as DuckDB does
        parts = path.split("/")
        fixed = next(i for i, part in enumerate(parts) if is_glob(part) or "=" in part)
        reader = reader.option("basePath", "/".join(parts[:fixed]) or ".")
    if lower.endswith(PARQUET_SUFFIXES) or (local and Path(path).is_dir()):
        df = reader.parquet(path)
    elif lower.endswith(CSV_SUFFIXES):
        sep = "\t" if ".tsv" in lower else ","
        df = reader.csv(path, header=True, inferSchema=True, sep=sep)
    else:
        raise DataError(
            f"cannot tell the format of {path!r}: use a name ending in "
            f"{', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)} (or a Parquet directory)"
        )
    return df
