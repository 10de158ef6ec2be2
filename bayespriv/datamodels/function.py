"""A data model from the user's own NumPy sampler."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import fail
from ..errors import ParameterTypeError, UnsupportedSecretError
from ..queries import Batch
from ..secrets import DatasetSecret, DistributionSecret, Secret
from .base import DataModel

__all__ = ["FunctionDataModel"]


class FunctionDataModel(DataModel):
    """Θ given by a function ``sampler(secret, n_draws, rng) -> batch``.

    The sampler receives the secret (or None), the number of datasets and a
    :class:`numpy.random.Generator`, and returns a mapping column -> array
    ``(n_draws, n_records)``. It must draw from the distribution of datasets
    *conditioned on the secret*; bayespriv checks shapes, not the conditioning.

    Parameters
    ----------
    sampler : callable
    columns : sequence of str
    n_records : int
    secret_kinds : tuple of type, default (DatasetSecret, DistributionSecret)
        Kinds of secret the sampler understands: a non-empty tuple of
        :class:`~bayespriv.DatasetSecret` / :class:`~bayespriv.DistributionSecret`
        (or one of them alone).
    theta : dict, optional
        Parameters naming this model inside a family.

    Examples
    --------
    >>> import numpy as np, bayespriv as bp
    >>> def draw(secret, n_draws, rng):
    ...     k = round(secret.value * 10)
    ...     x = np.concatenate([rng.normal(1, 1, (n_draws, k)), rng.normal(0, 1, (n_draws, 10 - k))], axis=1)
    ...     return {"x": x}
    >>> model = bp.FunctionDataModel(draw, columns=["x"], n_records=10)
    """

    def __init__(
        self,
        sampler: Callable[[Secret | None, int, np.random.Generator], Batch],
        *,
        columns: Sequence[str],
        n_records: int,
        secret_kinds: tuple[type, ...] = (DatasetSecret, DistributionSecret),
        theta: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(sampler):
            raise ParameterTypeError(f"sampler must be callable; got {type(sampler).__name__}")
        super().__init__(columns, n_records, theta)
        self.sampler = sampler
        self.secret_kinds = _check_secret_kinds(secret_kinds)

    def _signature_state(self) -> dict[str, Any]:
        """What defines this model's law (:mod:`bayespriv.datamodels.signature`): the sampler, with the code and the
        values it reads, and the kinds of secret it conditions on (by name)."""
        kinds = sorted(f"{k.__module__}.{k.__qualname__}" for k in self.secret_kinds)
        return {"columns": self.columns, "n_records": self.n_records, "theta": self.theta, "sampler": self.sampler,
                "secret_kinds": kinds}

    def check_secret(self, secret: Secret | None) -> None:
        if secret is None:
            return
        if not isinstance(secret, self.secret_kinds):
            raise UnsupportedSecretError(
                f"secret must be one of {[k.__name__ for k in self.secret_kinds]} for this FunctionDataModel; "
                f"got {type(secret).__name__}"
            )
        if isinstance(secret, DatasetSecret):
            super().check_secret(secret)

    def _sample(self, secret, n_draws, rng, columns) -> Batch:
        out = self.sampler(secret, n_draws, rng)
        if not isinstance(out, Mapping):
            raise ParameterTypeError(f"sampler must return a mapping column -> array; got {type(out).__name__}")
        return {c: np.asarray(out[c]) for c in columns if c in out}


def _check_secret_kinds(value: Any) -> tuple[type, ...]:
    """A non-empty tuple of secret classes (a single class is one kind)."""
    kinds = (value,) if isinstance(value, type) else value
    rule = "a non-empty tuple of secret classes (DatasetSecret, DistributionSecret)"
    if isinstance(kinds, (str, bytes)) or not isinstance(kinds, (tuple, list)) or not kinds:
        raise fail("secret_kinds", rule, value)
    for kind in kinds:
        if not (isinstance(kind, type) and issubclass(kind, (DatasetSecret, DistributionSecret))):
            raise fail("secret_kinds", rule, value)
    return tuple(kinds)
