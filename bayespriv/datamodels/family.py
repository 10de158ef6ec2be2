"""Θ as a set: a family of data models indexed by parameters.

The Pufferfish guarantee must hold for every θ in Θ. A
:class:`DataModelFamily` holds a builder and a finite set of parameter values;
:func:`~bayespriv.calibrate` calibrates every member and the resulting
:class:`~bayespriv.Calibration` reports the supremum the mechanisms need and
names the worst θ.

A finite grid covers Θ exactly only when Θ *is* that grid. For a box of
continuous parameters, :meth:`DataModelFamily.box` takes its corners and
interior points: the supremum over those points is a lower estimate of the
supremum over the box unless the quantity is monotone (or convex) in each
parameter, when the corners attain it. The family records which case the user
declared (``covers``) so reports can say so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import check_positive_int, described, fail
from ..errors import ParameterTypeError, ValidationError
from ..secrets import Secret
from .base import DataModel

__all__ = ["DataModelFamily"]

#: Members a family may have before construction refuses (each is calibrated).
MAX_MEMBERS = 10_000


class DataModelFamily:
    """A finite family of data models: Θ = {``builder(**θ)`` : θ in grid}.

    Parameters
    ----------
    builder : callable
        ``builder(**params)`` returns a :class:`DataModel`. Every member must
        have the same columns and number of records.
    grid : mapping
        Parameter name -> list of values; the family has one member per
        combination (Cartesian product), in row-major order of ``grid``.
    covers : {"grid", "corners"}, default "grid"
        What the user asserts about the grid: ``"grid"`` — Θ is exactly these
        points; ``"corners"`` — Θ is the box spanned by them and the quantities
        the mechanisms need are extreme at its corners (recorded as the
        assumption ``"extremes_at_grid"`` on guarantees).

    Examples
    --------
    >>> import bayespriv as bp
    >>> fam = bp.DataModelFamily(lambda mu: bp.GaussianDataModel([mu, 0.0], [[1, .5], [.5, 1]], ["x", "y"], 10),
    ...                          {"mu": [0.0, 1.0]})
    >>> len(fam)
    2
    """

    def __init__(self, builder: Callable[..., DataModel], grid: Mapping[str, Sequence[Any]], *, covers: str = "grid") -> None:
        if not callable(builder):
            raise ParameterTypeError(f"builder must be a callable returning a DataModel; got {type(builder).__name__}")
        if not isinstance(grid, Mapping) or not grid:
            raise fail("grid", "a non-empty mapping from parameter name to a list of values", grid)
        values: dict[str, tuple[Any, ...]] = {}
        for name, vals in grid.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise fail("grid", "keyed by parameter names that are Python identifiers", name)
            if isinstance(vals, (str, bytes)) or not isinstance(vals, Sequence | np.ndarray):
                raise fail(f"grid[{name!r}]", "a list of values", vals)
            vals = tuple(vals.tolist() if isinstance(vals, np.ndarray) else vals)
            if not vals:
                raise fail(f"grid[{name!r}]", "a non-empty list of values", described("[]"))
            values[name] = vals
        n = int(np.prod([len(v) for v in values.values()]))
        if n > MAX_MEMBERS:
            raise fail("grid", f"at most {MAX_MEMBERS} combinations", described(f"{n} combinations"))
        if covers not in ("grid", "corners"):
            raise fail("covers", "'grid' or 'corners'", covers)
        self.builder = builder
        self.grid = values
        self.covers = covers
        self.thetas: tuple[dict[str, Any], ...] = tuple(
            dict(zip(values, combo)) for combo in itertools.product(*values.values())
        )
        self._members: tuple[DataModel, ...] | None = None

    @classmethod
    def box(
        cls, builder: Callable[..., DataModel], bounds: Mapping[str, tuple[float, float]], *, interior: int = 1
    ) -> "DataModelFamily":
        """A box of continuous parameters: per parameter its two ends plus
        ``interior`` equally spaced interior points (all combinations).

        The calibration's supremum is over these points; it equals the supremum
        over the box when the needed quantities are extreme at the corners
        (recorded as the assumption ``"extremes_at_grid"``).
        """
        interior = check_positive_int(interior, "interior", minimum=0)
        grid = {}
        for name, b in bounds.items():
            lo, hi = (float(x) for x in b)
            if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
                raise fail(f"bounds[{name!r}]", "a finite (low, high) with low <= high", b)
            grid[name] = list(np.linspace(lo, hi, interior + 2)) if hi > lo else [lo]
        return cls(builder, grid, covers="corners")

    # -- members ---------------------------------------------------------------------
    @property
    def members(self) -> tuple[DataModel, ...]:
        """The data models, built once on first use, each with ``theta`` set."""
        if self._members is None:
            built = []
            for theta in self.thetas:
                model = self.builder(**theta)
                if not isinstance(model, DataModel):
                    raise ParameterTypeError(
                        f"builder must return a bayespriv DataModel; for {theta} it returned {type(model).__name__}"
                    )
                if not model.theta:
                    model.theta = dict(theta)
                built.append(model)
            first = built[0]
            for theta, m in zip(self.thetas, built):
                if m.columns != first.columns or m.n_records != first.n_records:
                    raise ValidationError(
                        "every member of a family must have the same columns and n_records; "
                        f"{theta} has columns {list(m.columns)} and n_records {m.n_records}, "
                        f"{self.thetas[0]} has {list(first.columns)} and {first.n_records}"
                    )
            self._members = tuple(built)
        return self._members

    @property
    def columns(self) -> tuple[str, ...]:
        """Record columns (the same for every member)."""
        return self.members[0].columns

    @property
    def n_records(self) -> int:
        """Records per dataset (the same for every member)."""
        return self.members[0].n_records

    def check_secret(self, secret: Secret | None) -> None:
        """Raise unless every member supports ``secret`` (:meth:`DataModel.check_secret`)."""
        for m in self.members:
            m.check_secret(secret)

    def __len__(self) -> int:
        return len(self.thetas)

    def __iter__(self):
        return iter(self.members)

    def __repr__(self) -> str:
        grid = ", ".join(f"{k}={list(v)}" for k, v in self.grid.items())
        return f"DataModelFamily({len(self)} members: {grid})"
