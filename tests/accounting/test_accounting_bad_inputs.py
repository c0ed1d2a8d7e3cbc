"""Bad inputs to the composition functions: typed errors that name the parameter."""

from __future__ import annotations

import math
from typing import Any

import pytest

from approxdp import (
    advanced_composition,
    amplify_by_subsampling,
    basic_composition,
    compose_gaussian,
    dp_to_pdp,
    group_privacy,
    optimal_composition,
    split_budget,
    zcdp_to_dp,
)
from approxdp.errors import InvalidParameterError, ParameterTypeError

CASES: list[tuple[Any, tuple[Any, ...], dict[str, Any], type, str]] = [
    (basic_composition, ([(-1.0, 0.0)],), {}, InvalidParameterError, "epsilon"),
    (basic_composition, ([(1.0, 1.0)],), {}, InvalidParameterError, "delta"),
    (basic_composition, ([],), {}, InvalidParameterError, "budgets"),
    (advanced_composition, (math.nan, 0.0, 10, 1e-6), {}, InvalidParameterError, "epsilon"),
    (advanced_composition, (0.1, 1.5, 10, 1e-6), {}, InvalidParameterError, "delta"),
    (advanced_composition, (0.1, 0.0, 0, 1e-6), {}, InvalidParameterError, "k"),
    (advanced_composition, (0.1, 0.0, 2.5, 1e-6), {}, InvalidParameterError, "k"),
    (advanced_composition, (0.1, 0.0, True, 1e-6), {}, ParameterTypeError, "k"),
    (advanced_composition, (0.1, 0.0, 10, 0.0), {}, InvalidParameterError, "delta_prime"),
    (optimal_composition, (-0.1, 0.0, 10, 1e-6), {}, InvalidParameterError, "epsilon"),
    (optimal_composition, (0.1, 0.0, -3, 1e-6), {}, InvalidParameterError, "k"),
    (optimal_composition, (0.1, 0.0, 10, 1.0), {}, InvalidParameterError, "delta_prime"),
    (optimal_composition, ("0.1", 0.0, 10, 1e-6), {}, ParameterTypeError, "epsilon"),
    (compose_gaussian, ([1.0, 0.0],), {}, InvalidParameterError, "sigmas"),
    (compose_gaussian, ([1.0, 2.0, 3.0], [1.0, 2.0]), {}, InvalidParameterError, "sensitivities"),
    (compose_gaussian, ([1.0], [-1.0]), {}, InvalidParameterError, "sensitivities"),
    (amplify_by_subsampling, (1.0, 1e-6, 0.0), {}, InvalidParameterError, "q"),
    (amplify_by_subsampling, (1.0, 1e-6, 1.5), {}, InvalidParameterError, "q"),
    (group_privacy, (1.0, 1e-6, 0), {}, InvalidParameterError, "k"),
    (dp_to_pdp, (1.0, 1e-6, 0.5), {}, InvalidParameterError, "epsilon_star"),
    (zcdp_to_dp, (-0.5, 1e-6), {}, InvalidParameterError, "rho"),
    (split_budget, (1.0, 1e-5, 0), {}, InvalidParameterError, "k"),
    (split_budget, (1.0, 1e-5, 10), {"composition": "magic"}, InvalidParameterError, "composition"),
    (
        split_budget,
        (1.0, 1e-5, 10),
        {"composition": "advanced", "delta_prime": 1e-4},
        InvalidParameterError,
        "delta_prime",
    ),
]


@pytest.mark.parametrize(("func", "args", "kwargs", "error", "name"), CASES)
def test_bad_input(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], error: type, name: str
) -> None:
    with pytest.raises(error, match=name):
        func(*args, **kwargs)
