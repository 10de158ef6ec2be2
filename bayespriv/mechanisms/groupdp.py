"""The group differential privacy baseline."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .._validation import check_positive_int
from ..calibration import Calibration
from ..errors import ValidationError
from .mechanism import Guarantee
from .sampled_moments import SampledMomentMechanism

__all__ = ["GroupDP"]

#: The assumption a GroupDP with fewer than all records fails: that the secrets change at most group_size records.
GROUP_COVERS_SECRET = "group_covers_secret"


class GroupDP(SampledMomentMechanism):
    """Laplace or Gaussian mechanism of differential privacy for groups of
    ``group_size`` records (default: all ``n_records``, as the baseline of
    Chen & Ohrimenko 2023, §5.1).

    The per-record sensitivity s (k,) comes from the query's declared bounds
    (:meth:`Query.record_sensitivity`: 1 for counts, (high − low)/n for
    ``mean(col, bounds=...)``, whose values are clipped into the bounds).
    Replacing g records moves component c by at most g·s_c, so the L1 / L2
    sensitivity for the group is ‖g s‖₁ / ‖g s‖₂.

    Privacy
    -------
    (ε, δ)-differential privacy for datasets differing in up to g records
    (Dwork & Roth 2014, Theorems 3.6 and A.1 / Balle & Wang 2018 for the
    analytic constant), applied with the group sensitivity. With g = n every
    two datasets of n records are neighbours, so the guarantee holds for *any*
    secret pair and any Θ: it does not depend on the calibration's moments
    (confidence 1, no assumption). The price is noise that grows with n.

    ``noise=None`` (default) is Laplace when ``delta`` is 0 and Gaussian when a
    δ > 0 is given.

    A ``group_size`` below ``n_records`` gives the noise of record- or
    group-level DP, a baseline to compare with, but no guarantee for the
    calibration's secrets: a share or a mean over the dataset, or a parameter
    of the distribution, can change every record. Its guarantee fails the
    assumption ``group_covers_secret`` (not established): ``release`` refuses
    without ``options=ReleaseOptions(accept_failed_assumptions=True)``.
    """

    #: Differential privacy: sequential composition is a theorem (the ledger adds its charges).
    _composition: ClassVar[str] = "dp"

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float = 0.0,
        noise: str | None = None,
        group_size: int | None = None,
        n_records: int | None = None,
        gaussian_calibration: str = "analytic",
    ) -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        query = calibration.query
        if query is None:
            raise ValidationError("GroupDP needs a calibration with a query that declares per-record bounds; got none")
        n = n_records if n_records is not None else calibration.n_records
        if n is None:
            raise ValidationError("n_records must be given when the calibration does not know it; got None")
        self.n_records = check_positive_int(n, "n_records")
        self.group_size = check_positive_int(self.n_records if group_size is None else group_size, "group_size")
        if self.group_size > self.n_records:
            raise ValidationError(f"group_size must be at most n_records={self.n_records}; got {self.group_size}")
        self.record_sensitivity = query.record_sensitivity(self.n_records)
        group = self.group_size * self.record_sensitivity
        self._set_isotropic(noise, np.abs(group).sum(), np.linalg.norm(group), gaussian_calibration)

    def _compute_guarantee(self) -> Guarantee:
        delta = 0.0 if self.noise_kind == "laplace" else self.delta
        theorem = f"group DP, group of {self.group_size} of {self.n_records} records (Dwork & Roth 2014)"
        # Only n_records and the query come from the calibration; a file that did not verify still says so.
        unverified = tuple(a for a in self.calibration.assumptions if a == "unverified_calibration")
        # Every secret bayespriv knows (a share or a mean over the dataset, a distribution parameter) can change all
        # n records: groups of fewer cover no secret pair, so the guarantee is not established for the secrets.
        failed = (GROUP_COVERS_SECRET,) if self.group_size < self.n_records else ()
        return Guarantee(self.epsilon, delta, 1.0, unverified + failed, theorem, failed_assumptions=failed)
