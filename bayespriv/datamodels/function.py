"""A data model from the user's own NumPy sampler."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

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
        Kinds of secret the sampler understands.
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
        self.secret_kinds = tuple(secret_kinds)

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
