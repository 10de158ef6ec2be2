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
    "DrawsNeededError",
    "AssumptionFailedError",
    "LedgerError",
    "ImmutableError",
    "ReleaseMismatchError",
    "UnverifiedCalibrationError",
    "SigningKeyError",
    "BayesPrivWarning",
    "PrivacyAssumptionWarning",
    "BayesPrivDeprecationWarning",
    "warn",
]


class BayesPrivError(Exception):
    """Base class of every error raised on purpose by bayespriv.

    Examples
    --------
    >>> import bayespriv as bp
    >>> try:
    ...     bp.GaussianDataModel([0.0], [[1.0]], ["x"], n_records=0)
    ... except bp.BayesPrivError as error:
    ...     print(type(error).__name__, "-", error)
    ValidationError - n_records must be an integer >= 1; got 0
    """


class ValidationError(BayesPrivError, ValueError):
    """An argument has the right type but breaks a rule (range, shape, content).

    Examples
    --------
    >>> import bayespriv as bp
    >>> bp.GaussianDataModel([0.0], [[1.0]], ["x"], n_records=0)
    Traceback (most recent call last):
    ...
    bayespriv.errors.ValidationError: n_records must be an integer >= 1; got 0
    """


class ParameterTypeError(BayesPrivError, TypeError):
    """An argument has the wrong type.

    Examples
    --------
    >>> import bayespriv as bp
    >>> bp.mean(3)
    Traceback (most recent call last):
    ...
    bayespriv.errors.ParameterTypeError: column must be a non-empty string; got 3 of type int
    """


class UnsupportedSecretError(ValidationError):
    """A data model cannot condition on the secret it was given.

    Examples
    --------
    A Gaussian model has no parameter to intervene on:

    >>> import bayespriv as bp
    >>> model = bp.GaussianDataModel([0.0], [[1.0]], ["x"], n_records=5)
    >>> model.sample(bp.DistributionSecret("p", 0.5), 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayespriv.errors.UnsupportedSecretError: GaussianDataModel cannot condition on distribution secrets; got 'p=0.5'. ...
    """


class DrawsNeededError(ValidationError):
    """A guarantee needs more draws per secret than the calibration has.

    A bound resting on draws cannot go below the mass a region may have while every draw
    misses it (about ln(1/α)/n for n draws); a request below what the draws can certify is
    refused, and the refusal says how many would do.

    Attributes
    ----------
    draws_needed : int
        Draws per secret that would leave room for the noise (see the message).
    draws : int
        Draws per secret the calibration has.
    """

    def __init__(self, message: str, *, draws_needed: int, draws: int) -> None:
        super().__init__(message)
        self.draws_needed = int(draws_needed)
        self.draws = int(draws)


class ConvergenceError(ValidationError):
    """Inference inside a data model (MCMC) failed its convergence checks; the
    message says which diagnostic failed and what to change.

    Examples
    --------
    Raised by :func:`~bayespriv.calibrate` on a :class:`~bayespriv.PyMCDataModel` whose MCMC run
    fails R-hat, ESS or divergence checks; the run is on the error's ``posterior``. It is a
    ``ValueError``, so callers that only distinguish bad inputs keep working:

    >>> import bayespriv as bp
    >>> issubclass(bp.ConvergenceError, ValueError)
    True
    """


class AssumptionFailedError(BayesPrivError, ValueError):
    """A release was asked of a mechanism whose guarantee rests on an assumption
    that failed its check on the calibration samples. Nothing was spent and no
    noise was drawn; the message names the failed check, its statistic and the
    remedies (an unequal-covariance calibration, ``relaxed(eta)``, more draws,
    or ``options=bp.ReleaseOptions(accept_failed_assumptions=True)`` to release with the guarantee
    recorded as *not established*).

    Examples
    --------
    >>> import bayespriv as bp
    >>> issubclass(bp.AssumptionFailedError, ValueError)  # caught by ``except ValueError`` too
    True
    """


class ImmutableError(BayesPrivError, AttributeError):
    """An attribute of an immutable object (a mechanism after construction) was
    assigned or deleted. Build a new object instead: its noise and guarantee
    are computed once, at construction, from its arguments."""


class ReleaseMismatchError(ValidationError):
    """The data given to ``release`` do not match what was calibrated (row
    count, columns, query); nothing was spent and no noise was drawn.

    Examples
    --------
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> a, b = bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0)
    >>> cal = bp.Calibration.from_moments({a: [146.67], b: [153.33]}, {a: [[6.0]], b: [[6.0]]},
    ...                                   bp.SecretPair(a, b), bp.mean("weight"), n_records=3)
    >>> bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3).release(pd.DataFrame({"weight": [150.0, 160.0]}))
    Traceback (most recent call last):
    ...
    bayespriv.errors.ReleaseMismatchError: dataset must have 3 rows, as calibrated (the noise covers datasets of that size only); got 2 rows
    """


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
    to do. Nothing was spent.

    Examples
    --------
    >>> import bayespriv as bp
    >>> bp.Ledger("/no-such-directory/budget.sqlite")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayespriv.errors.LedgerError: ledger file '/no-such-directory/budget.sqlite' is in a directory that does not exist ...
    """


class BudgetExceededError(BayesPrivError):
    """A release would spend more privacy budget than is left; nothing was spent.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> a, b = bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0)
    >>> cal = bp.Calibration.from_moments({a: [146.67], b: [153.33]}, {a: [[6.0]], b: [[6.0]]},
    ...                                   bp.SecretPair(a, b), bp.mean("weight"), n_records=3)
    >>> mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     ledger = bp.Ledger(os.path.join(folder, "budget.sqlite"))
    ...     ledger.set_budget("height", 0.5)
    ...     try:
    ...         mech.release(pd.DataFrame({"weight": [150.0, 160.0, 170.0]}), ledger=ledger)
    ...     except bp.BudgetExceededError:
    ...         print("refused; spent", ledger.spent("height"))
    refused; spent (0.0, 0.0)
    """


class BayesPrivWarning(UserWarning):
    """Base class of bayespriv warnings.

    Examples
    --------
    Turn every bayespriv warning into an error (the test suite does):

    >>> import warnings
    >>> import bayespriv as bp
    >>> a, b = bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0)
    >>> cal = bp.Calibration.from_moments({a: [146.67], b: [153.33]}, {a: [[6.0]], b: [[6.0]]}, bp.SecretPair(a, b))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", bp.BayesPrivWarning)
    ...     bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3, gaussian_calibration="classic")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayespriv.errors.PrivacyAssumptionWarning: classic Gaussian calibration (c = sqrt(2 ln(1.25/δ))) is proven only for epsilon < 1; ...
    """


class BayesPrivDeprecationWarning(BayesPrivWarning, DeprecationWarning):
    """An old spelling (a moved name, a renamed keyword) that still works for one release.

    Examples
    --------
    >>> import warnings
    >>> import bayespriv as bp
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     sigma = bp.mechanisms.gaussian_sigma(1.0, 1.0, 1e-5)
    >>> caught[0].category.__name__, sigma == bp.privacy.gaussian_sigma(1.0, 1.0, 1e-5)
    ('BayesPrivDeprecationWarning', True)
    """


class PrivacyAssumptionWarning(BayesPrivWarning):
    """A guarantee rests on an assumption whose proof does not cover the inputs.

    Examples
    --------
    The classic Gaussian constant is proven only for ε < 1:

    >>> import warnings
    >>> import bayespriv as bp
    >>> a, b = bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0)
    >>> cal = bp.Calibration.from_moments({a: [146.67], b: [153.33]}, {a: [[6.0]], b: [[6.0]]}, bp.SecretPair(a, b))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3, gaussian_calibration="classic")
    >>> [w.category.__name__ for w in caught]
    ['PrivacyAssumptionWarning']
    """


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
