"""Exceptions and warnings raised by :mod:`bayespriv`.

Every error a user can trigger by passing a bad argument is a subclass of
:class:`BayesPrivError` *and* of the matching built-in (``ValueError`` or
``TypeError``), so ``except ValueError`` keeps working in user code.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = [
    "BayesPrivError",
    "ValidationError",
    "ParameterTypeError",
    "UnsupportedSecretError",
    "BudgetExceededError",
    "ConvergenceError",
    "AssumptionFailedError",
    "LedgerError",
    "ImmutableError",
    "ReleaseMismatchError",
    "UnverifiedCalibrationError",
    "SigningKeyError",
    "BayesPrivWarning",
    "PrivacyAssumptionWarning",
    "warn",
]


class BayesPrivError(Exception):
    """Base class of every error raised on purpose by bayespriv."""


class ValidationError(BayesPrivError, ValueError):
    """An argument has the right type but breaks a rule (range, shape, content)."""


class ParameterTypeError(BayesPrivError, TypeError):
    """An argument has the wrong type."""


class UnsupportedSecretError(ValidationError):
    """A data model cannot condition on the secret it was given."""


class ConvergenceError(ValidationError):
    """Inference inside a data model (MCMC) failed its convergence checks; the
    message says which diagnostic failed and what to change."""


class AssumptionFailedError(BayesPrivError, ValueError):
    """A release was asked of a mechanism whose guarantee rests on an assumption
    that failed its check on the calibration samples. Nothing was spent and no
    noise was drawn; the message names the failed check, its statistic and the
    remedies (an unequal-covariance calibration, ``relaxed(eta)``, more draws,
    or ``accept_failed_assumptions=True`` to release with the guarantee
    recorded as *not established*)."""


class ImmutableError(BayesPrivError, AttributeError):
    """An attribute of an immutable object (a mechanism after construction) was
    assigned or deleted. Build a new object instead: its noise and guarantee
    are computed once, at construction, from its arguments."""


class ReleaseMismatchError(ValidationError):
    """The data given to ``release`` do not match what was calibrated (row
    count, columns, query); nothing was spent and no noise was drawn."""


class UnverifiedCalibrationError(ValidationError):
    """A calibration file cannot be trusted: it carries no MAC, was signed with
    another key, its contents changed after signing, or they contradict
    themselves (a stored moment that does not follow from the stored samples);
    or a release was asked of a mechanism built on a calibration loaded with
    ``trust="unverified"`` without the explicit opt-in. The message names the
    file, what failed and what to do. Nothing was spent and no noise was drawn."""


class SigningKeyError(BayesPrivError, OSError):
    """The data owner's signing key cannot be used: no key where a reader
    needs one (readers never create a key), a malformed ``BAYESPRIV_KEY``, a
    key file readable by others, or one that cannot be written. The message
    names the path or variable and what to do."""


class LedgerError(BayesPrivError, OSError):
    """The ledger file cannot be used (missing directory, read-only, corrupt,
    truncated, or not a bayespriv ledger); the message names the path and what
    to do. Nothing was spent."""


class BudgetExceededError(BayesPrivError):
    """A release would spend more privacy budget than is left; nothing was spent."""


class BayesPrivWarning(UserWarning):
    """Base class of bayespriv warnings."""


class PrivacyAssumptionWarning(BayesPrivWarning):
    """A guarantee rests on an assumption whose proof does not cover the inputs."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def warn(message: str, category: type[Warning] = BayesPrivWarning) -> None:
    """Warn, attributing the warning to the first caller outside bayespriv.

    So the user sees the line of *their* code, and once-per-location filters
    treat each of their calls separately.
    """
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is the caller of warn()
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
