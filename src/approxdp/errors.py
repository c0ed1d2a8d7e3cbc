"""Exceptions and warnings raised by approxdp.

Every error derives from :class:`ApproxDPError` and also from the built-in exception a caller
would expect (``ValueError`` for a bad value, ``TypeError`` for a value of the wrong type), so
that ``except ValueError`` keeps working. Messages name the parameter, the value that was given,
the allowed range and, where there is one, the fix.

This module imports nothing from approxdp: it sits at the bottom of the import graph.
"""

from __future__ import annotations

__all__ = [
    "EXACT_LABEL",
    "ApproxDPError",
    "BudgetExceededError",
    "DataCheckError",
    "DataError",
    "ExpressionError",
    "InsufficientDataError",
    "InternalError",
    "InvalidParameterError",
    "LedgerError",
    "LedgerRecertificationWarning",
    "MissingDependencyError",
    "NotPrivateError",
    "NotPrivateWarning",
    "ParameterTypeError",
    "PrivateJoinError",
    "SeededLedgerError",
    "SmallDataWarning",
    "UnknownMethodError",
]

#: How every message that states an exact, data-dependent fact is labelled.
EXACT_LABEL = "exact, not private — for the data holder"


class ApproxDPError(Exception):
    """Base class of every exception raised by approxdp."""


class InvalidParameterError(ApproxDPError, ValueError):
    """A parameter has the right type but a value outside its allowed range."""


class ParameterTypeError(ApproxDPError, TypeError):
    """A parameter has the wrong type (a string where a number is expected, None, ...)."""


class UnknownMethodError(InvalidParameterError):
    """A method, notion or other named choice is not one of the known names."""


class NotPrivateError(ApproxDPError, ValueError):
    """A calibration was asked for a guarantee that its noise does not give.

    Raised, for instance, by the classical Gaussian formulas at large epsilon, where their sigma
    is not (epsilon, delta)-DP. Pass ``allow_non_private=True`` to get the value anyway (with a
    :class:`NotPrivateWarning`), or use ``method="optimal"``.
    """


class BudgetExceededError(ApproxDPError, ValueError):
    """A spend would take the privacy accountant over its budget; nothing was spent.

    Attributes:
        remaining: what was left of the budget when the spend was refused (the accountant's
            status object), or None.
        requested: what was asked for (the event or events), or None.
    """

    def __init__(self, message: str, *, remaining: object = None, requested: object = None):
        super().__init__(message)
        self.remaining = remaining
        self.requested = requested


class LedgerError(ApproxDPError, ValueError):
    """A privacy ledger file is corrupt, foreign, or cannot be used."""


class DataError(ApproxDPError, ValueError):
    """Input data cannot be released as asked (missing column, wrong type, empty table, ...)."""


class DataCheckError(DataError):
    """A check that read the data exactly failed: its message states an exact fact about the
    data (a count, a value), labelled "(exact, not private — for the data holder)".

    Attributes:
        advice: What to change, in words that hold no value derived from the data — what a
            page shown to others (the browser) says instead of the message.
    """

    def __init__(self, message: str, *, advice: str):
        super().__init__(f"{message} ({EXACT_LABEL})")
        self.advice = advice


class InsufficientDataError(DataCheckError):
    """Too few rows for the release asked: its result would carry no information (e.g. private
    bounds whose histogram no bin of the data can rise above the noise of). Raised before any
    spend, unless ``spent`` says otherwise.

    Attributes:
        spent: Whether a spend was already recorded (the first of two, whose output showed the
            second would be useless); False for a refusal before any spend.
    """

    def __init__(self, message: str, *, advice: str, spent: bool = False):
        super().__init__(message, advice=advice)
        self.spent = spent


class SeededLedgerError(InvalidParameterError):
    """A seeded release (a reproducible simulation, NOT private) would be charged to a
    persistent ledger as if it were a real one; refused unless the caller opts in, and then
    marked "seeded, not private" in the ledger."""


class ExpressionError(InvalidParameterError):
    """A filter predicate or derived-column expression is outside approxdp's row-expression
    language (:mod:`approxdp.engines.expressions`): a subquery, a file reader, an unknown
    function or column, a statement separator, a comment, or operands of the wrong type.

    Attributes:
        expression: The expression as given.
        part: The offending part of it (a function, a column, an operator...).
        reason: What is wrong, without the expression (front ends prefix it with their own
            name for the expression, e.g. ``--where 'x > 1': ...``).
    """

    def __init__(self, message: str, *, expression: str = "", part: str = "",
                 reason: str = ""):
        super().__init__(message)
        self.expression = expression
        self.part = part
        self.reason = reason or message


class PrivateJoinError(ParameterTypeError):
    """A join of two private tables was asked for: only a public table (data that does not
    depend on anyone's private data) may be joined with a private one (see
    ``PrivateTable.join_public``)."""


class InternalError(ApproxDPError, RuntimeError):
    """An invariant of approxdp itself does not hold: a bug, not a bad input.

    Raised, for instance, when a release is about to add noise other than the noise its spend
    records. It is raised before anything is spent or released; please report it.
    """


class MissingDependencyError(ApproxDPError, ImportError):
    """An optional dependency needed by the requested feature is not installed."""


class NotPrivateWarning(UserWarning):
    """Issued when a caller explicitly asks for noise that is not private at their (ε, δ)."""


class LedgerRecertificationWarning(UserWarning):
    """Issued when a ledger file written before privacy filters (schema 2 or older) is opened
    and its stored history exceeds its budget under a valid filter: every row is kept, the
    status says so, and further spends are refused until the user decides (reopen it with
    ``adaptivity="fixed"`` to declare that the stored spends' parameters were fixed in advance,
    or keep it as a record and start a new ledger)."""


class SmallDataWarning(UserWarning):
    """The data look too small for the release asked (e.g. most groups lie below the partition
    selection's threshold): an exact, data-dependent warning for the data holder, labelled so.
    ``advice`` says what to change without any value from the data."""

    def __init__(self, message: str, *, advice: str = ""):
        super().__init__(f"{message} ({EXACT_LABEL})")
        self.advice = advice
