"""What a mechanism reads from a calibration, whatever kind it is: :class:`CalibrationLike`.

Three kinds of calibration feed mechanisms: the moments of F per secret
(:class:`~bayespriv.Calibration`), the quilts of a parameter network
(:class:`~bayespriv.networks.QuiltCalibration`) and the quilts of a Markov chain
(:class:`~bayespriv.networks.ChainCalibration`). Each mechanism reads its own kind in full, but the
contract every mechanism shares (:class:`~bayespriv.mechanisms.Mechanism`: the release path, the
guarantee's confidence and assumptions, the gate on unverified files) reads only the attributes
named here, and every kind provides each of them — ``None`` or ``()`` where a kind has no such
thing (a quilt calibration records no query fingerprint). A mechanism checks its calibration
against this contract once, at construction (:func:`check_calibration`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bayespriv.errors import ParameterTypeError

if TYPE_CHECKING:
    from bayespriv.calibration.provenance import FileProvenance
    from bayespriv.queries import Query

__all__ = ["CalibrationLike", "CALIBRATION_ATTRIBUTES", "check_calibration"]


@runtime_checkable
class CalibrationLike(Protocol):
    """The attributes every mechanism reads from its calibration (read-only).

    ``isinstance(obj, CalibrationLike)`` tells whether ``obj`` has all of them;
    :func:`check_calibration` also names the missing ones.

    Examples
    --------
    >>> import bayespriv as bp
    >>> from bayespriv.calibration import CalibrationLike
    >>> a, b = bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0)
    >>> cal = bp.Calibration.from_moments({a: [146.67], b: [153.33]}, {a: [[6.0]], b: [[6.0]]}, bp.SecretPair(a, b))
    >>> isinstance(cal, CalibrationLike), isinstance("a calibration", CalibrationLike)
    (True, False)
    """

    @property
    def query(self) -> Query | None:
        """The calibrated query (None: unknown, e.g. moments given without one)."""

    @property
    def n_records(self) -> int | None:
        """Records per dataset the noise is calibrated for (None: unknown)."""

    @property
    def k(self) -> int:
        """Number of components of the query."""

    @property
    def query_fingerprint(self) -> str | None:
        """:attr:`Query.fingerprint <bayespriv.Query.fingerprint>` of the calibrated query, checked before a
        release (None: not recorded)."""

    @property
    def component_names(self) -> tuple[str, ...]:
        """Names of the query's components (``()``: unnamed)."""

    @property
    def confidence(self) -> float | None:
        """Probability that every bound of the calibration holds (None: plug-in estimates)."""

    @property
    def assumptions(self) -> tuple[str, ...]:
        """Assumptions every guarantee built on the calibration inherits."""

    @property
    def provenance(self) -> FileProvenance | None:
        """The file the calibration was loaded from and whether it verified (None: computed in this process)."""


#: The attribute names of :class:`CalibrationLike`, in the order they are declared.
CALIBRATION_ATTRIBUTES: tuple[str, ...] = tuple(name for name, value in vars(CalibrationLike).items()
                                                if isinstance(value, property))


def check_calibration(value: Any, name: str = "calibration") -> Any:
    """``value`` when it provides every attribute of :class:`CalibrationLike`; else
    :class:`~bayespriv.errors.ParameterTypeError` naming ``name``, the rule, the value received and
    the attributes it lacks."""
    missing = [attr for attr in CALIBRATION_ATTRIBUTES if not hasattr(value, attr)]
    if missing:
        text = repr(value)
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ParameterTypeError(
            f"{name} must be a calibration (Calibration from calibrate, QuiltCalibration from calibrate_quilts or "
            f"ChainCalibration from calibrate_chain: an object with {', '.join(CALIBRATION_ATTRIBUTES)}); got "
            f"{shown} of type {type(value).__name__}, which has no {', '.join(missing)}")
    return value
