"""Exceptions and warnings raised by :mod:`bayespriv`.

Every error a user can trigger by passing a bad argument is a subclass of
:class:`BayesPrivError` *and* of the matching built-in (``ValueError`` or
``TypeError``), so ``except ValueError`` keeps working in user code.
"""

from __future__ import annotations

__all__ = [
    "BayesPrivError",
    "ValidationError",
    "ParameterTypeError",
    "UnsupportedSecretError",
    "BudgetExceededError",
    "BayesPrivWarning",
    "PrivacyAssumptionWarning",
]


class BayesPrivError(Exception):
    """Base class of every error raised on purpose by bayespriv."""


class ValidationError(BayesPrivError, ValueError):
    """An argument has the right type but breaks a rule (range, shape, content)."""


class ParameterTypeError(BayesPrivError, TypeError):
    """An argument has the wrong type."""


class UnsupportedSecretError(ValidationError):
    """A data model cannot condition on the secret it was given."""


class BudgetExceededError(BayesPrivError):
    """A release would spend more privacy budget than is left; nothing was spent."""


class BayesPrivWarning(UserWarning):
    """Base class of bayespriv warnings."""


class PrivacyAssumptionWarning(BayesPrivWarning):
    """A guarantee rests on an assumption whose proof does not cover the inputs."""
