"""Data sets bundled with approxdp (see each directory's README and LICENSE).

- ``adult/``: UCI Adult (Census Income), CC BY 4.0 — :func:`load_adult`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

from approxdp.errors import InvalidParameterError

__all__ = [
    "ADULT_CATEGORICAL",
    "ADULT_COLUMNS",
    "ADULT_NUMERIC",
    "adult_path",
    "load_adult",
]

ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)  # fmt: skip
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week")
ADULT_CATEGORICAL = tuple(c for c in ADULT_COLUMNS if c not in ADULT_NUMERIC)


def adult_path(name: str = "adult.data.gz") -> Path:
    """Path of a bundled Adult file (``adult.data.gz``, ``adult.test.gz``, ``README.md``...)."""
    path = Path(str(resources.files("approxdp.data").joinpath("adult", name)))
    if not path.exists():
        raise InvalidParameterError(f"no bundled Adult file named {name!r}")
    return path


def load_adult(
    split: Literal["all", "train", "test"] = "all", *, complete_only: bool = True
) -> Any:
    """The Adult data as a PyArrow table, parsed as its README says.

    Leading spaces are stripped, ``?`` becomes NULL, the test labels' trailing ``.`` is
    removed and the test file's comment line skipped; numeric columns are int64.

    Args:
        split: ``"train"`` (adult.data, 32,561 rows), ``"test"`` (adult.test, 16,281) or
            ``"all"`` (48,842).
        complete_only: Keep only rows with no missing value (45,222 of all rows: the
            setting of Zhao et al.'s Fig. 5).

    >>> load_adult().num_rows
    45222
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv

    if split not in ("all", "train", "test"):
        raise InvalidParameterError(f"split must be 'all', 'train' or 'test', got {split!r}")
    files = {"train": ["adult.data.gz"], "test": ["adult.test.gz"]}
    names = files["train"] + files["test"] if split == "all" else files[split]
    tables = []
    for name in names:
        table = csv.read_csv(
            adult_path(name),
            read_options=csv.ReadOptions(
                column_names=list(ADULT_COLUMNS), skip_rows=1 if "test" in name else 0
            ),
            convert_options=csv.ConvertOptions(
                column_types={c: pa.string() for c in ADULT_COLUMNS}, strings_can_be_null=False
            ),
        )
        cols = []
        for c in ADULT_COLUMNS:
            col = pc.utf8_trim_whitespace(table.column(c))
            if c == "income":
                col = pc.replace_substring_regex(col, pattern=r"\.$", replacement="")
            col = pc.if_else(pc.equal(col, "?"), pa.scalar(None, pa.string()), col)
            cols.append(col.cast(pa.int64()) if c in ADULT_NUMERIC else col)
        tables.append(pa.table(cols, names=list(ADULT_COLUMNS)))
    out = pa.concat_tables(tables)
    if complete_only:
        out = out.drop_null()
    return out
