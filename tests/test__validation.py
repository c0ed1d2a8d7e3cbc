"""Validation helpers and events: typed errors naming the parameter, value and range."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approxdp import (
    ApproxDPError,
    ComposedEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    InvalidParameterError,
    LaplaceEvent,
    ParameterTypeError,
    SubsampledEvent,
)
from approxdp._validation import check_interval, check_probability


def test_interval_accepts_and_returns_arrays() -> None:
    out = check_interval("epsilon", [0.5, 1.0], 0.0, math.inf, low_open=True)
    assert out.dtype == np.float64
    assert out.tolist() == [0.5, 1.0]


@pytest.mark.parametrize(
    ("value", "error", "fragment"),
    [
        (-1.0, InvalidParameterError, "epsilon=-1"),
        (math.nan, InvalidParameterError, "epsilon=nan"),
        ("1.0", ParameterTypeError, "str"),
        (None, ParameterTypeError, "None"),
        (True, ParameterTypeError, "bool"),
        ([1.0, -2.0], InvalidParameterError, "1 of 2 elements"),
        (1 + 2j, ParameterTypeError, "real"),
    ],
)
def test_interval_rejects(value: object, error: type[Exception], fragment: str) -> None:
    with pytest.raises(error) as info:
        check_interval("epsilon", value, 0.0, math.inf, low_open=True)
    assert "epsilon" in str(info.value)
    assert fragment in str(info.value)
    assert isinstance(info.value, ApproxDPError)


def test_probability_range_message() -> None:
    with pytest.raises(InvalidParameterError, match=r"delta must be in \(0, 1\), got delta=1.5"):
        check_probability("delta", 1.5)


def test_events_validate() -> None:
    assert GaussianEvent(2.0, 1.0).sigma == 2.0
    assert LaplaceEvent(0.5, 1.0).epsilon == 2.0
    with pytest.raises(InvalidParameterError, match="sigma"):
        GaussianEvent(-1.0)
    with pytest.raises(InvalidParameterError, match="delta"):
        EpsilonDeltaEvent(1.0, 1.0)
    with pytest.raises(InvalidParameterError, match="q"):
        SubsampledEvent(EpsilonDeltaEvent(1.0, 0.0), 0.0)
    with pytest.raises(ParameterTypeError, match="events"):
        ComposedEvent((EpsilonDeltaEvent(1.0), "oops"))  # type: ignore[arg-type]
