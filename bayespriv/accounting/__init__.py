"""Deprecated alias of :mod:`bayespriv.ledger`, kept for one release.

The ledger (budgets, joint accounting of releases on the same data, per-variable ε tables) is
:mod:`bayespriv.ledger`; "accountant" is the privacy-curve machinery of :mod:`bayespriv.privacy`.
Every name of ``bayespriv.ledger`` resolves here too, with a
:class:`~bayespriv.errors.BayesPrivDeprecationWarning`.
"""

import sys

import bayespriv.ledger as ledger
import bayespriv._deprecation as _deprecation

__all__: list[str] = []

_deprecation.moved_names(sys.modules[__name__], {
    name: (getattr(ledger, name), f"bayespriv.ledger.{name}") for name in ledger.__all__})
