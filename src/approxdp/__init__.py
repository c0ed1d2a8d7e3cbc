"""approxdp: approximate (ε, δ) differential privacy with exactly calibrated Gaussian noise.

The names below are importable from ``approxdp`` itself; each section's subpackage has the rest
(SciPy's habit: a map of the API, by topic).

Calibration (:mod:`approxdp.calibration`) — the noise for a guarantee
    calibrate_gaussian, calibrate_discrete_gaussian, scale_sigma, CALIBRATION_METHODS,
    CalibrationMethod, method_verdicts, MethodVerdict, classical_failure_threshold

Privacy profiles (:mod:`approxdp.profiles`) — the guarantee of a noise
    gaussian_delta, gaussian_log_delta, gaussian_pdp_delta, gaussian_log_pdp_delta,
    gaussian_epsilon, laplace_delta, truncated_laplace_delta, truncated_laplace_tau,
    discrete_laplace_delta, discrete_gaussian_delta, zcdp_delta

Mechanisms (:mod:`approxdp.mechanisms`) — secure noise by default
    GaussianMechanism, LaplaceMechanism, TruncatedLaplaceMechanism,
    DiscreteGaussianMechanism, SimulatedFloat, SimulatedArray, SimulatedInt, is_secure

Events (:mod:`approxdp.events`) — what a release did, for the accountants
    PrivacyEvent, GaussianEvent, LaplaceEvent, DiscreteGaussianEvent, EpsilonDeltaEvent,
    SubsampledEvent, ComposedEvent

Accounting (:mod:`approxdp.accounting`) — what releases cost together
    composition: basic_composition, advanced_composition, simplified_advanced_composition,
    optimal_composition, compose_gaussian, ComposedGaussian, Guarantee;
    conversions: amplify_by_subsampling, group_privacy, dp_to_pdp, zcdp_to_dp;
    budget splitting: split_budget, BudgetSplit, SPLIT_RULES;
    PLD: pld_epsilon, pld_delta; RDP: rdp_subsampled_gaussian, rdp_to_epsilon,
    rdp_to_delta;
    DP-SGD: dpsgd_epsilon, dpsgd_delta, calibrate_dpsgd, compare_dpsgd_accountants,
    dpsgd_schedule_epsilon, dpsgd_schedule_delta, DPSGDPhase, TrainingAccountant,
    DPSGD_ACCOUNTANTS;
    the budget: PrivacyAccountant, BudgetStatus, PlanResult, SpendRecord,
    read_ledger_settings, COMPOSITION_RULES

Releases (:mod:`approxdp.releases`) — private statistics of tables
    PrivateTable; the query specs Count, Sum, Mean, Histogram, LinearQuery, LinearQueries,
    Quantiles, Median, Variance, Std, PrivateBounds, Query; RELEASE_KINDS, KindInputs;
    ContributionBounds, ReleasePlan, ReleaseResult, MethodComparison

Engines (:mod:`approxdp.engines`) — where the data lives: DuckDB (default) and Spark;
imported on use. Plots (:mod:`approxdp.plots`) and the experiments of Zhao et al. 2019
(:mod:`approxdp.experiments`, :mod:`approxdp.reproduction`) need the ``plots`` extra.
Front ends: the ``approxdp`` command (:mod:`approxdp.cli`) and ``approxdp serve``
(:mod:`approxdp.web`).

Errors (:mod:`approxdp.errors`)
    ApproxDPError and its kinds: InvalidParameterError, ParameterTypeError,
    UnknownMethodError, NotPrivateError, BudgetExceededError, LedgerError, DataError,
    DataCheckError,
    InsufficientDataError, SeededLedgerError, ExpressionError, PrivateJoinError,
    InternalError, MissingDependencyError; NotPrivateWarning, SmallDataWarning
"""

from __future__ import annotations

from approxdp._version import __version__
from approxdp.accounting import (
    COMPOSITION_RULES,
    DPSGD_ACCOUNTANTS,
    SPLIT_RULES,
    BudgetSplit,
    BudgetStatus,
    ComposedGaussian,
    DPSGDPhase,
    Guarantee,
    PlanResult,
    PrivacyAccountant,
    SpendRecord,
    TrainingAccountant,
    advanced_composition,
    amplify_by_subsampling,
    basic_composition,
    calibrate_dpsgd,
    compare_dpsgd_accountants,
    compose_gaussian,
    dp_to_pdp,
    dpsgd_delta,
    dpsgd_epsilon,
    dpsgd_schedule_delta,
    dpsgd_schedule_epsilon,
    group_privacy,
    optimal_composition,
    pld_delta,
    pld_epsilon,
    rdp_subsampled_gaussian,
    rdp_to_delta,
    rdp_to_epsilon,
    read_ledger_settings,
    simplified_advanced_composition,
    split_budget,
    zcdp_to_dp,
)
from approxdp.calibration import (
    CALIBRATION_METHODS,
    CalibrationMethod,
    MethodVerdict,
    calibrate_discrete_gaussian,
    calibrate_gaussian,
    classical_failure_threshold,
    method_verdicts,
    scale_sigma,
)
from approxdp.errors import (
    ApproxDPError,
    BudgetExceededError,
    DataCheckError,
    DataError,
    ExpressionError,
    InsufficientDataError,
    InternalError,
    InvalidParameterError,
    LedgerError,
    MissingDependencyError,
    NotPrivateError,
    NotPrivateWarning,
    ParameterTypeError,
    PrivateJoinError,
    SeededLedgerError,
    SmallDataWarning,
    UnknownMethodError,
)
from approxdp.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    SubsampledEvent,
)
from approxdp.mechanisms import (
    DiscreteGaussianMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    SimulatedArray,
    SimulatedFloat,
    SimulatedInt,
    TruncatedLaplaceMechanism,
    is_secure,
)
from approxdp.profiles import (
    discrete_gaussian_delta,
    discrete_laplace_delta,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_log_pdp_delta,
    gaussian_pdp_delta,
    laplace_delta,
    truncated_laplace_delta,
    truncated_laplace_tau,
    zcdp_delta,
)
from approxdp.releases import (
    RELEASE_KINDS,
    ContributionBounds,
    Count,
    Histogram,
    KindInputs,
    LinearQueries,
    LinearQuery,
    Mean,
    Median,
    MethodComparison,
    PrivateBounds,
    PrivateTable,
    Quantiles,
    Query,
    ReleasePlan,
    ReleaseResult,
    Std,
    Sum,
    Variance,
)

__all__ = [
    "CALIBRATION_METHODS",
    "COMPOSITION_RULES",
    "DPSGD_ACCOUNTANTS",
    "RELEASE_KINDS",
    "SPLIT_RULES",
    "ApproxDPError",
    "BudgetExceededError",
    "BudgetSplit",
    "BudgetStatus",
    "CalibrationMethod",
    "ComposedEvent",
    "ComposedGaussian",
    "ContributionBounds",
    "Count",
    "DPSGDPhase",
    "DataCheckError",
    "DataError",
    "DiscreteGaussianEvent",
    "DiscreteGaussianMechanism",
    "EpsilonDeltaEvent",
    "ExpressionError",
    "GaussianEvent",
    "GaussianMechanism",
    "Guarantee",
    "Histogram",
    "InsufficientDataError",
    "InternalError",
    "InvalidParameterError",
    "KindInputs",
    "LaplaceEvent",
    "LaplaceMechanism",
    "LedgerError",
    "LinearQueries",
    "LinearQuery",
    "Mean",
    "Median",
    "MethodComparison",
    "MethodVerdict",
    "MissingDependencyError",
    "NotPrivateError",
    "NotPrivateWarning",
    "ParameterTypeError",
    "PlanResult",
    "PrivacyAccountant",
    "PrivacyEvent",
    "PrivateBounds",
    "PrivateJoinError",
    "PrivateTable",
    "Quantiles",
    "Query",
    "ReleasePlan",
    "ReleaseResult",
    "SeededLedgerError",
    "SimulatedArray",
    "SimulatedFloat",
    "SimulatedInt",
    "SmallDataWarning",
    "SpendRecord",
    "Std",
    "SubsampledEvent",
    "Sum",
    "TrainingAccountant",
    "TruncatedLaplaceMechanism",
    "UnknownMethodError",
    "Variance",
    "__version__",
    "advanced_composition",
    "amplify_by_subsampling",
    "basic_composition",
    "calibrate_discrete_gaussian",
    "calibrate_dpsgd",
    "calibrate_gaussian",
    "classical_failure_threshold",
    "compare_dpsgd_accountants",
    "compose_gaussian",
    "discrete_gaussian_delta",
    "discrete_laplace_delta",
    "dp_to_pdp",
    "dpsgd_delta",
    "dpsgd_epsilon",
    "dpsgd_schedule_delta",
    "dpsgd_schedule_epsilon",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_log_delta",
    "gaussian_log_pdp_delta",
    "gaussian_pdp_delta",
    "group_privacy",
    "is_secure",
    "laplace_delta",
    "method_verdicts",
    "optimal_composition",
    "pld_delta",
    "pld_epsilon",
    "rdp_subsampled_gaussian",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "read_ledger_settings",
    "scale_sigma",
    "simplified_advanced_composition",
    "split_budget",
    "truncated_laplace_delta",
    "truncated_laplace_tau",
    "zcdp_delta",
    "zcdp_to_dp",
]
