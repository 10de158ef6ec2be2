"""The Monte-Carlo estimator's input (``privacy/mixture_mc.py``): :class:`WeightedAtoms`, a finite law as
weighted atoms checked once, and :func:`mixture_hockey`'s spelling with it (the four loose arrays by position
are the deprecated spelling: they warn and give the identical estimate)."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from bayespriv.errors import BayesPrivDeprecationWarning, ImmutableError, ParameterTypeError, ValidationError
from bayespriv.privacy import WeightedAtoms
from bayespriv.privacy.accountant import GaussianNoise, LaplaceNoise
from bayespriv.privacy.mixture_mc import WEIGHTS_SUM_TOL, MixtureEstimate, mixture_hockey

ATOMS = [[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]
WEIGHTS = [0.25, 0.5, 0.25]
OLD_SPELLING_WARNING = (r"^mixture_hockey\(atoms_a, weights_a, atoms_b, weights_b, noise, epsilon\) is deprecated.*"
                        r"use mixture_hockey\(WeightedAtoms\(atoms_a, weights_a\), WeightedAtoms\(atoms_b, weights_b\)")


# ------------------------------------------------------------------------------------ the value
def test_weighted_atoms_keeps_a_valid_law_read_only():
    law = WeightedAtoms(ATOMS, WEIGHTS)
    assert law.atoms.shape == (3, 2) and law.weights.shape == (3,)
    assert law.atoms.dtype == law.weights.dtype == np.float64
    assert not law.atoms.flags.writeable and not law.weights.flags.writeable
    with pytest.raises(ValueError):
        law.atoms.setflags(write=True)  # sealed memory: a copy of a list cannot be made writable
    np.testing.assert_array_equal(law.atoms, ATOMS)
    np.testing.assert_array_equal(law.weights, WEIGHTS)


def test_a_vector_of_atoms_is_one_coordinate():
    assert WeightedAtoms([0.0, 1.0, 2.0], WEIGHTS).atoms.shape == (3, 1)


@pytest.mark.parametrize("atoms, weights, error, field", [
    ("text", WEIGHTS, ParameterTypeError, "atoms"),
    ([[True, False]] * 3, WEIGHTS, ParameterTypeError, "atoms"),
    (ATOMS, "text", ParameterTypeError, "weights"),
    (ATOMS, [True, False, True], ParameterTypeError, "weights"),
    ([[0.0, np.nan], [1.0, 0.0], [2.0, 2.0]], WEIGHTS, ValidationError, "atoms"),
    ([[0.0, np.inf], [1.0, 0.0], [2.0, 2.0]], WEIGHTS, ValidationError, "atoms"),
    (np.zeros((3, 2, 1)), WEIGHTS, ValidationError, "atoms"),
    (np.zeros((3, 0)), WEIGHTS, ValidationError, "atoms"),
    (np.zeros((0, 2)), [], ValidationError, "atoms"),
    (5.0, [1.0], ValidationError, "atoms"),
    (ATOMS, [0.5, 0.5], ValidationError, "weights"),
    (ATOMS, [[0.25, 0.5, 0.25]], ValidationError, "weights"),
    (ATOMS, [0.25, np.nan, 0.25], ValidationError, "weights"),
    (ATOMS, [-0.25, 1.0, 0.25], ValidationError, "weights"),
    (ATOMS, [0.25, 0.5, 0.3], ValidationError, "weights"),
    (ATOMS, [0.25, 0.5, 0.25 + 2 * WEIGHTS_SUM_TOL], ValidationError, "weights"),
])
def test_weighted_atoms_refuses_a_bad_field_by_name(atoms, weights, error, field):
    with pytest.raises(error, match=rf"^{field} must be"):
        WeightedAtoms(atoms, weights)


def test_the_weights_may_miss_1_by_the_tolerance_and_be_zero():
    law = WeightedAtoms(ATOMS, [0.0, 0.75, 0.25 + WEIGHTS_SUM_TOL / 2])
    assert law.weights[0] == 0.0


def test_a_read_only_float64_array_is_kept_without_a_copy():
    atoms, weights = np.array(ATOMS), np.array(WEIGHTS)
    atoms.setflags(write=False)
    weights.setflags(write=False)
    law = WeightedAtoms(atoms, weights)
    assert law.atoms is atoms and law.weights is weights
    column = np.array([0.0, 1.0, 2.0])
    column.setflags(write=False)
    assert np.shares_memory(WeightedAtoms(column, weights).atoms, column)


def test_a_writable_array_is_copied_so_the_value_cannot_change():
    atoms, weights = np.array(ATOMS), np.array(WEIGHTS)
    law = WeightedAtoms(atoms, weights)
    atoms[0, 0], weights[0] = 99.0, 0.0
    assert law.atoms[0, 0] == 0.0 and law.weights[0] == 0.25


def test_weighted_atoms_refuses_assignment_and_survives_pickling():
    law = WeightedAtoms(ATOMS, WEIGHTS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        law.atoms = np.zeros((3, 2))
    with pytest.raises(ImmutableError):
        object.__setattr__(law, "weights", np.ones(3) / 3)
    back = pickle.loads(pickle.dumps(law))
    np.testing.assert_array_equal(back.atoms, law.atoms)
    assert not back.atoms.flags.writeable and not back.weights.flags.writeable


# ------------------------------------------------------------------------- the two spellings
def _laws(k: int = 2, n: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    return rng.normal(0.0, 1.0, (n, k)) + 0.8, np.full(n, 1 / n), rng.normal(0.0, 1.0, (n, k)), np.full(n, 1 / n)


def _assert_identical(old: MixtureEstimate, new: MixtureEstimate) -> None:
    """Field by field, bit for bit (NaN equal to NaN, arrays by their values)."""
    for field in dataclasses.fields(MixtureEstimate):
        was, now = getattr(old, field.name), getattr(new, field.name)
        if dataclasses.is_dataclass(was):
            for part in dataclasses.fields(was):
                np.testing.assert_array_equal(getattr(was, part.name), getattr(now, part.name),
                                              err_msg=f"{field.name}.{part.name}")
        else:
            np.testing.assert_array_equal(np.asarray(was, float), np.asarray(now, float), err_msg=field.name)


@pytest.mark.parametrize("noise", [GaussianNoise(np.eye(2) * 0.5), LaplaceNoise([0.6, 0.8], np.eye(2))],
                         ids=["gaussian", "laplace"])
def test_the_deprecated_spelling_warns_and_gives_the_identical_estimate(noise):
    xa, wa, xb, wb = _laws()
    new = mixture_hockey(WeightedAtoms(xa, wa), WeightedAtoms(xb, wb), noise, 1.0, n_points=256, seed=[7, 1],
                         sampled=(True, False))
    with pytest.warns(BayesPrivDeprecationWarning, match=OLD_SPELLING_WARNING):
        old = mixture_hockey(xa, wa, xb, wb, noise, 1.0, n_points=256, seed=[7, 1], sampled=(True, False))
    _assert_identical(old, new)
    assert new.halves is not None and new.contributions.values_a is not None


def test_the_estimate_is_a_function_of_the_seed():
    xa, wa, xb, wb = _laws()
    law_a, law_b, noise = WeightedAtoms(xa, wa), WeightedAtoms(xb, wb), GaussianNoise(np.eye(2) * 0.5)
    first = mixture_hockey(law_a, law_b, noise, 1.0, n_points=256, seed=3)
    _assert_identical(first, mixture_hockey(law_a, law_b, noise, 1.0, n_points=256, seed=3))
    assert mixture_hockey(law_a, law_b, noise, 1.0, n_points=256, seed=4).value != first.value


def test_mixture_hockey_refuses_a_law_that_is_not_weighted_atoms():
    xa, wa, _, _ = _laws()
    with pytest.raises(ParameterTypeError, match=r"^law_b must be a bayespriv WeightedAtoms"):
        mixture_hockey(WeightedAtoms(xa, wa), xa, GaussianNoise(np.eye(2)), 1.0)


def test_mixture_hockey_counts_positional_arguments_as_python_does():
    xa, wa, xb, wb = _laws()
    noise, law_a, law_b = GaussianNoise(np.eye(2)), WeightedAtoms(xa, wa), WeightedAtoms(xb, wb)
    with pytest.raises(TypeError, match=r"^mixture_hockey\(\) takes 4 positional arguments but 5 were given$"):
        mixture_hockey(law_a, law_b, noise, 1.0, 512)
    with pytest.raises(TypeError, match=r"takes 6 positional arguments in its deprecated spelling .* but 5 were given"):
        mixture_hockey(xa, wa, xb, wb, noise)


def test_mixture_hockey_refuses_an_unknown_keyword_as_python_does():
    xa, wa, xb, wb = _laws()
    with pytest.raises(TypeError, match=r"mixture_hockey\(\) got an unexpected keyword argument 'atoms_a'"):
        mixture_hockey(WeightedAtoms(xa, wa), WeightedAtoms(xb, wb), GaussianNoise(np.eye(2)), 1.0, atoms_a=xa)


def test_the_old_spelling_checks_the_arrays_as_the_value_does():
    xa, wa, xb, _ = _laws()
    with pytest.warns(BayesPrivDeprecationWarning), pytest.raises(ValidationError, match=r"^weights must be"):
        mixture_hockey(xa, wa, xb, wa[:-1], GaussianNoise(np.eye(2)), 1.0)


@pytest.mark.parametrize("laplace", [False, True])
@pytest.mark.parametrize("spread", [1.0, 300.0])  # float32 and float64 kernels
def test_a_block_in_a_reused_buffer_is_the_whole_array_computation(laplace, spread):
    """Block.of scales and exponentiates a few rows at a time, in a reused buffer: the values are those of the
    whole-array operations, bit for bit, and a buffer reused for another block leaves no trace."""
    from bayespriv.privacy.mixture_mc import Block, _Scratch, _log_kernel, _log_norm

    rng = np.random.default_rng(3)
    atoms, y = rng.normal(size=(3000, 3)) * spread, rng.normal(size=(700, 3)) * spread
    g, shift = _log_kernel(y, atoms, laplace)
    top = g.max(axis=1, keepdims=True)
    expected = np.exp(g - top)
    scratch = _Scratch()
    Block.of(rng.normal(size=(900, 3)) * spread, atoms, laplace, scratch)  # the buffer's previous use, larger
    blk = Block.of(y, atoms, laplace, scratch)
    assert blk.e.dtype == expected.dtype and np.array_equal(blk.e, expected)
    assert np.array_equal(blk.top, top[:, 0].astype(np.float64) + shift + _log_norm(3, laplace))


def test_one_dimensional_halves_are_each_halfs_own_distinct_values_and_weights():
    """Exact part: the grid's split halves, read off the whole law's distinct values, are bit for bit what
    each half's own np.unique and weight sums give (repeated values, a zero weight and a value only one half
    reaches included); the whole law's too."""
    from bayespriv.privacy.mixture_1d import atoms_of

    rng = np.random.default_rng(11)
    x = np.concatenate([rng.integers(0, 40, 301).astype(float), [99.0]])
    w = rng.random(x.size)
    w[7] = 0.0
    w /= w.sum()
    got = atoms_of(x, w)
    z, inv = np.unique(x, return_inverse=True)
    np.testing.assert_array_equal(got.z, z)
    np.testing.assert_array_equal(got.u, np.bincount(inv, weights=w))
    for (hz, hu, mass), part in zip(got.halves, (slice(0, 151), slice(151, 302))):
        own, own_inv = np.unique(x[part], return_inverse=True)
        assert mass == float(w[part].sum())
        np.testing.assert_array_equal(hz, own)
        np.testing.assert_array_equal(hu, np.bincount(own_inv, weights=w[part] / mass))
    assert 99.0 in got.halves[1][0] and 99.0 not in got.halves[0][0]
