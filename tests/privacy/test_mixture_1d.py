"""One-dimensional quadrature of the hockey-stick divergence (``privacy/mixture_1d.py``): the densities made once
for every ε give what the one-direction computation gives, bit for bit, and cannot be written to."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bayespriv.privacy.accountant import GaussianNoise, LaplaceNoise
from bayespriv.privacy.mixture_1d import atoms_of, grid_densities, grid_hockey, hockey_on_grid

RNG = np.random.default_rng(7)
DRAWS_A, DRAWS_B = RNG.standard_t(3.0, 3_000) + 0.4, RNG.normal(0.0, 1.0, 2_500)
NOISES = [GaussianNoise([[1.3]]), LaplaceNoise([0.9], [[1.0]])]


def _atoms(x: np.ndarray):
    return atoms_of(x[:, None], np.full(x.size, 1.0 / x.size))


def _same(x, y) -> bool:
    """Equal to the last bit: dataclasses field by field, arrays element by element (NaN equal to NaN)."""
    if dataclasses.is_dataclass(x):
        return type(x) is type(y) and all(_same(getattr(x, f.name), getattr(y, f.name))
                                          for f in dataclasses.fields(x))
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.array_equal(x, y, equal_nan=True)
    return repr(x) == repr(y)  # floats (NaN included), tuples of floats, ints, None


@pytest.mark.parametrize("noise", NOISES, ids=["gaussian", "laplace"])
@pytest.mark.parametrize("sampled", [(True, True), (True, False), (False, True)])
def test_both_directions_on_one_grid_are_each_direction_alone(noise, sampled):
    a, b = _atoms(DRAWS_A), _atoms(DRAWS_B)
    grid = grid_densities(a, None, b, None, noise, sampled=sampled)
    for eps in (0.3, 1.0, 2.5):
        forward, backward = hockey_on_grid(grid, eps, sampled=sampled)
        assert _same(forward, grid_hockey(a, None, b, None, noise, eps, sampled=sampled))
        assert _same(backward, grid_hockey(b, None, a, None, noise, eps, sampled=sampled[::-1]))
    assert not _same(forward, grid_hockey(a, None, b, None, noise, 2.5 * (1 + 1e-12), sampled=sampled))


def test_kept_densities_are_read_only():
    grid = grid_densities(_atoms(DRAWS_A), None, _atoms(DRAWS_B), None, NOISES[0])
    for array in (grid.y, grid.a.density, grid.b.density, *grid.a.halves, *grid.b.halves):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0


def test_a_grid_too_fine_is_none():
    wide = np.array([0.0, 1e9])
    assert grid_densities(_atoms(wide), None, _atoms(wide), None, GaussianNoise([[1e-6]])) is None
