"""The one way into randomness.

Every function that draws takes ``rng`` (``None`` | int | ``SeedSequence`` |
``Generator``). There is no global random state anywhere in bayespriv.

* :func:`as_generator` turns ``rng`` into a :class:`numpy.random.Generator`;
  ``None`` means fresh entropy from the operating system.
* :func:`spawn_seeds` derives independent child seeds for parallel tasks, so a
  calibration gives the same numbers whichever executor runs its tasks.
* :func:`release_generator` is used for release noise: fresh OS entropy unless
  the caller passes a seed, and it says whether the release was seeded.
"""

from __future__ import annotations

import numbers
from typing import Union

import numpy as np

from .errors import ParameterTypeError

RNGLike = Union[None, int, np.random.SeedSequence, np.random.Generator]

__all__ = ["RNGLike", "as_generator", "as_seed_sequence", "spawn_seeds", "release_generator"]


def as_seed_sequence(rng: RNGLike) -> np.random.SeedSequence:
    """A :class:`~numpy.random.SeedSequence` for ``rng``.

    A ``Generator`` contributes a fresh child of its own seed sequence (via
    :meth:`numpy.random.Generator.spawn`), so the caller's generator advances and
    two calls never share a stream.
    """
    if rng is None:
        return np.random.SeedSequence()
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        seed_seq = rng.bit_generator.seed_seq
        if isinstance(seed_seq, np.random.SeedSequence):
            return seed_seq.spawn(1)[0]
        return np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise ParameterTypeError(f"rng must be a non-negative integer seed; got {rng!r}")
        return np.random.SeedSequence(int(rng))
    raise ParameterTypeError(
        f"rng must be None, a non-negative int, a numpy SeedSequence or a numpy Generator; got {type(rng).__name__}"
    )


def as_generator(rng: RNGLike) -> np.random.Generator:
    """A :class:`numpy.random.Generator` for ``rng`` (a Generator is returned as is)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(as_seed_sequence(rng))


def spawn_seeds(rng: RNGLike, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child seed sequences of ``rng`` (deterministic for a seed)."""
    return as_seed_sequence(rng).spawn(n)


def release_generator(rng: RNGLike) -> tuple[np.random.Generator, bool]:
    """Generator for release noise and whether it was seeded by the caller.

    ``None`` draws fresh entropy from the OS; anything else is a seeded release,
    which a data owner should only use for testing (the noise can be replayed).
    """
    return as_generator(rng), rng is not None
