"""What a sampler reported alongside its draws, as one checked value: :class:`DrawReport`.

:func:`~bayespriv.calibration.calibration_from_samples` summarises draws of F(X) | secret into a
:class:`~bayespriv.calibration.Calibration`; the draws alone give its moments, and the report gives the rest:
how many intervals share the confidence, the data model's diagnostics and MCMC runs, and the exact laws
when the model could tabulate them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .._validation import check_optional_positive_int, described, fail, freeze, thaw
from ..errors import ParameterTypeError
from .fields import _checked_posteriors
from .laws import FiniteLaw

__all__ = ["DrawReport"]


def _checked_diagnostics(diagnostics: Any) -> Mapping[str, Any] | None:
    """None, or a deep read-only copy of a mapping with string keys."""
    if diagnostics is None:
        return None
    if not isinstance(diagnostics, Mapping):
        raise ParameterTypeError(f"diagnostics must be None or a mapping of str; got {type(diagnostics).__name__}")
    bad = [key for key in diagnostics if not isinstance(key, str)]
    if bad:
        raise fail("diagnostics", "a mapping with string keys", described(f"key {bad[0]!r}"))
    return freeze(diagnostics)


def _checked_finite_laws(finite_laws: Any) -> Mapping[str, FiniteLaw] | None:
    """None, or a read-only copy of a mapping of secret labels (str) to :class:`FiniteLaw`."""
    if finite_laws is None:
        return None
    if not isinstance(finite_laws, Mapping):
        raise ParameterTypeError(f"finite_laws must be None or a mapping of secret labels to FiniteLaw; got "
                                 f"{type(finite_laws).__name__}")
    for label, law in finite_laws.items():
        if not isinstance(label, str) or not isinstance(law, FiniteLaw):
            raise ParameterTypeError(f"finite_laws must map secret labels (str) to FiniteLaw; got {label!r}: "
                                     f"{type(law).__name__}")
    return MappingProxyType(dict(finite_laws))


def _rebuilt(state: dict[str, Any]) -> DrawReport:
    """A :class:`DrawReport` from its plain fields (unpickling: read-only mappings do not pickle)."""
    return DrawReport(**state)


@dataclass(frozen=True, kw_only=True)
class DrawReport:
    """What the sampler reported alongside the draws (``calibration_from_samples(..., report=...)``), checked once.

    Keyword-only and frozen; the default, ``DrawReport()``, reports nothing: the Bonferroni split covers
    this calibration's own intervals, and the result has no diagnostics, no MCMC runs and no exact laws.
    The mappings are kept as read-only copies. A wrong type is a
    :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field.

    Attributes
    ----------
    n_events : int, optional
        Intervals the Bonferroni split of ``confidence`` covers, at least 1. Default: this calibration's
        own (a mean per component and a covariance entry per pair of components, per secret); a family
        passes the total over its members, so that their bounds hold jointly.
    diagnostics : mapping of str, optional
        The data model's diagnostics (:attr:`DataModel.diagnostics
        <bayespriv.datamodels.DataModel.diagnostics>`), kept on the result
        (:attr:`Calibration.diagnostics <bayespriv.calibration.Calibration.diagnostics>`).
    posteriors : mapping of str to arviz.InferenceData, optional
        The data model's MCMC runs per secret label (:attr:`DataModel.posteriors
        <bayespriv.datamodels.DataModel.posteriors>`), kept on the result.
    finite_laws : mapping of str to FiniteLaw, optional
        The exact law of F per secret label (:meth:`DataModel.exact_law
        <bayespriv.datamodels.DataModel.exact_law>`), one for every secret. With them the moments are the
        laws' own, exact (``confidence`` 1.0), and the draws are kept for diagnostics.

    Examples
    --------
    >>> from bayespriv.calibration import DrawReport
    >>> DrawReport(n_events=12, diagnostics={"sampler": "forward"})
    DrawReport(n_events=12, diagnostics=mappingproxy({'sampler': 'forward'}), posteriors=None, finite_laws=None)
    >>> DrawReport(n_events=0)
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: n_events must be an integer >= 1; got 0
    """

    n_events: int | None = None
    diagnostics: Mapping[str, Any] | None = None
    posteriors: Mapping[str, Any] | None = None
    finite_laws: Mapping[str, FiniteLaw] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_events", check_optional_positive_int(self.n_events, "n_events"))
        object.__setattr__(self, "diagnostics", _checked_diagnostics(self.diagnostics))
        if self.posteriors is not None:
            object.__setattr__(self, "posteriors", _checked_posteriors(self.posteriors))
        object.__setattr__(self, "finite_laws", _checked_finite_laws(self.finite_laws))

    def __reduce__(self) -> tuple[Any, ...]:
        def plain(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
            return None if value is None else dict(value)

        return _rebuilt, ({"n_events": self.n_events, "posteriors": plain(self.posteriors),
                           "finite_laws": plain(self.finite_laws),
                           "diagnostics": None if self.diagnostics is None else thaw(self.diagnostics)},)
