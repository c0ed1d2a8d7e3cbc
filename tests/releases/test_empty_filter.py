"""A filter that matches nobody still releases noise (issue 23: a refusal would tell the
recipient that nobody matched — membership of whoever a unique key names). Every kind that
can release on zero rows does, spending as usual; a statistic that needs rows (private bounds)
refuses with a typed error labelled exact, before anything is spent. On DuckDB and Spark."""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from approxdp import InsufficientDataError, PrivacyAccountant, PrivateTable
from approxdp.errors import EXACT_LABEL, DataError
from approxdp.releases.kinds import KindInputs

N = 300
RELEASED = [
    ("count", KindInputs()),
    ("sum", KindInputs(columns=("age",), bounds=(0, 100))),
    ("mean", KindInputs(columns=("age",), bounds=(0, 100))),
    ("histogram", KindInputs(columns=("sex",), domain={"sex": ["F", "M"]})),
    ("histogram", KindInputs(columns=("sex",))),  # DP partition selection: no cell survives
    ("sum", KindInputs(columns=("age",), bounds=(0, 100), by=("sex",),
                       domain={"sex": ["F", "M"]})),
    ("median", KindInputs(columns=("age",), bounds=(0, 100))),
    ("quantiles", KindInputs(columns=("age",), bounds=(0, 100), qs=(0.25, 0.5))),
    ("variance", KindInputs(columns=("age",), bounds=(0, 100))),
    ("std", KindInputs(columns=("age",), bounds=(0, 100))),
]
REFUSED = [
    ("mean", KindInputs(columns=("age",), bounds="private")),
    ("bounds", KindInputs(columns=("age",))),
]


def _people() -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({"id": np.arange(N), "age": rng.integers(18, 90, N).astype(float),
                     "sex": rng.choice(["F", "M"], N)})


def _table(engine: str, data: Any) -> PrivateTable:
    acc = PrivacyAccountant(budget=(20.0, 1e-5))
    return PrivateTable(data, accountant=acc, engine=engine).filter("id = 1000000")


def _data(engine: str, request: pytest.FixtureRequest) -> Any:
    if engine == "spark":
        return request.getfixturevalue("spark_session").createDataFrame(_people().to_pandas())
    return _people()


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_a_filter_matching_nobody_releases_noise(engine: str,
                                                request: pytest.FixtureRequest) -> None:
    data = _data(engine, request)
    for kind, inputs in RELEASED:
        t = _table(engine, data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = t.release_kind(kind, inputs, epsilon=1.0, delta=1e-6)
        assert t.accountant.remaining().count == 1, kind  # spent, as for any other answer
        artifact = json.dumps(result.to_dict(), default=str)
        assert "empty" not in artifact and "0 rows" not in artifact, kind
        assert result.secure is not None and result.secure, kind
        values = list(result.as_dict().values())
        assert all(np.isfinite(float(v)) for v in values), (kind, values)
    # the same query on the whole table would also have released: no different outcome
    whole = PrivateTable(data, budget=(2.0, 1e-5), engine=engine)
    assert whole.count(epsilon=1.0, delta=1e-6).value is not None


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_a_statistic_that_needs_rows_refuses_before_any_spend(
    engine: str, request: pytest.FixtureRequest,
) -> None:
    data = _data(engine, request)
    for kind, inputs in REFUSED:
        t = _table(engine, data)
        with pytest.raises(InsufficientDataError) as caught:
            t.release_kind(kind, inputs, epsilon=1.0, delta=1e-6)
        assert EXACT_LABEL in str(caught.value) and not caught.value.spent
        assert "0 non-missing" not in caught.value.advice  # the advice holds no data count
        assert t.accountant.remaining().count == 0 and t.accountant.history() == ()


def test_an_empty_file_is_still_the_data_holders_error() -> None:
    """Without a filter, a table with no rows is the file the data holder chose: refused,
    labelled exact, nothing spent (a header-only CSV is a mistake, not an answer)."""
    empty = _people().slice(0, 0)
    t = PrivateTable(empty, budget=(1.0, 1e-6))
    with pytest.raises(DataError, match="the table is empty"):
        t.count(epsilon=0.5, delta=1e-7)
    assert t.accountant.history() == ()
