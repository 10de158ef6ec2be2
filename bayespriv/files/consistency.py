"""A loaded calibration must agree with itself: recompute what can be recomputed, refuse a contradiction.

A MAC proves who wrote a file, not that the writer was right: a bug, or
anyone holding the key, can sign a file whose stored means do not follow from
its stored samples. :func:`~bayespriv.files.calibration_io.load_calibration`
therefore recomputes, after verifying the MAC, everything a guarantee rests on
that the file itself determines, and refuses a mismatch with
:class:`~bayespriv.errors.UnverifiedCalibrationError` naming the quantity, the
node (group) and the secret.

What is recomputed
------------------
Sampled calibrations (:func:`check_calibration`), per node (the root and each
family member):

* the shape of ``samples`` against the secrets, the components and ``n_draws``;
* ``mean``, ``cov``, ``mean_se``, ``cov_se`` and ``cov_se_white``, by
  :func:`~bayespriv.calibration.moments.sample_moments` — the very function
  :func:`~bayespriv.calibrate` summarises its draws with. On the machine and
  NumPy that wrote the file the results are bit-identical; the check allows
  :data:`RTOL` (1e-9) of each quantity's natural scale (the standard deviation
  of a component for a mean, ``√(σ_c² σ_d²)`` for a covariance entry, the
  largest entry of the secret's array for a standard error), far below any
  Monte-Carlo error, so that another BLAS or NumPy summation order still
  loads. ``cov_se_white`` is the exception: a covariance with repeated
  eigenvalues has many eigenbases, and another LAPACK may whiten in another
  one; a stored array that differs is still accepted when its shrink factor
  ``1 + z·ρ`` (all that the covariance lower bound reads) is at least the
  recomputed one — a smaller stored factor would claim a larger variance and
  is refused;
* ``z``: at least the Bonferroni quantile of ``confidence`` over the
  calibration's interval count (checked when the Calibration is built; ``z``
  = 0 for plug-in calibrations, standard errors all 0 for ``confidence`` =
  1, which recomputed standard errors then contradict);
* a family's root: the member with the largest L2 sensitivity bound, as
  :func:`~bayespriv.calibrate` returns it, with that member's arrays bit for
  bit.

Calibrations with exact laws (:attr:`~bayespriv.Calibration.finite_laws`:
:meth:`~bayespriv.Calibration.from_laws`, or :func:`~bayespriv.calibrate` on a
model that tabulates them), per node: every stored law is a law (finite
points, positive weights summing to 1 within 1e-9, one per secret, of the
query's dimension; checked when the file is read, with no rescaling, so it
comes back bit for bit); ``mean`` and ``cov`` are the laws' own moments
(:func:`law_mismatch`, within :data:`RTOL` of the same natural scales as for
samples); the standard errors are 0 and ``confidence`` 1.0. The draws such a
calibration keeps are diagnostics — the moments and the accountant read the
laws — so only their shape and ``n_draws`` are checked against the node. A
law that was edited together with moments recomputed from it agrees with
itself: only the MAC vouches that it is the model's law.

A calibration without samples or laws (:meth:`~bayespriv.Calibration.from_moments`,
exact moments) has nothing to recompute: its numbers are what its author
stated, vouched for by the MAC alone. The draws of a PyMC calibration depend
on its MCMC posteriors, and the posteriors on the model: neither can be
recomputed without the model and a new MCMC run, so the saved posterior
groups are covered by the MAC only.

Chain calibrations (:func:`check_chain`): every stored chain is validated as a
:class:`~bayespriv.networks.quilts.MarkovChain`, the max-influence table of
each chain is recomputed from its transition matrix and initial law (the
code :func:`~bayespriv.networks.quilts.calibrate_chain` uses, O(T·w²·k²)),
the stored table must be their maximum, and the Lipschitz constant must be at
least the query's record sensitivity when the query declares one (a given
larger constant is conservative).

Quilt calibrations (:func:`check_quilt`): every stored quilt of every
sensitive node is evaluated afresh on the rebuilt networks
(:meth:`~bayespriv.networks.quilts.QuiltCalibration.evaluate`): its split
into quilt / nearby / remote (d-separation), its Δ_{A∩N} F from the query's
column sensitivities and its max-influence (value, margin, per-member values,
exactness) by variable elimination; Δ_A F of the whole query and the
assumptions and confidence that follow from the max-influences are recomputed
too. Not recomputed: the *search* (``n_quilts``, ``skipped``, which quilts were
tried): APMQM picks among the stored quilts, and any Markov quilt with its
true Δ and e gives the guarantee (Theorem 3 of the attribute-privacy paper),
so a shorter list costs noise, never privacy.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from bayespriv.errors import UnverifiedCalibrationError
from bayespriv.calibration.moments import RTOL, law_mismatch, sample_moments, shrink_factor, worst_violation as _worst

if TYPE_CHECKING:
    from bayespriv.calibration import Calibration
    from bayespriv.networks.quilts import ChainCalibration, QuiltCalibration

__all__ = ["RTOL", "check_calibration", "check_chain", "check_quilt", "law_mismatch"]

#: Relative tolerance of a recomputed quantity, of its natural scale (see the module notes).

_REMEDY = ("No calibration computes such a file: it comes from a bug in the program that wrote it or from an edit "
           "(which, under a valid MAC, takes someone holding the key). Do not release from it; re-run calibrate")


def _refuse(source: str, what: str) -> UnverifiedCalibrationError:
    return UnverifiedCalibrationError(f"{source} must agree with itself; got {what}. {_REMEDY}")


def _check_draws(cal: Calibration, node: str, source: str) -> None:
    samples = cal.sample_array
    S, k = cal.mean_array.shape
    if samples.shape[0] != S or samples.shape[2] != k:
        raise _refuse(source, f"samples of shape {samples.shape} in {node} for {S} secrets and {k} components")
    if cal.n_draws != samples.shape[1]:
        raise _refuse(source, f"n_draws={cal.n_draws} in {node} but {samples.shape[1]} stored draws per secret")


def _check_laws(cal: Calibration, node: str, source: str) -> None:
    """A node with exact laws: its moments are theirs (its draws are diagnostics: shape only)."""
    if cal.sample_array is not None:
        _check_draws(cal, node, source)
    wrong = law_mismatch(cal.secrets, cal.component_names, cal.finite_laws, cal.mean_array, cal.cov_array)
    if wrong is not None:
        raise _refuse(source, f"{wrong} in {node}")
    if cal.confidence != 1.0 or any(np.any(getattr(cal, n)) for n in ("mean_se", "cov_se", "cov_se_white")):
        raise _refuse(source, f"confidence {cal.confidence!r} or non-zero standard errors in {node}, whose moments are "
                              "those of exact laws")


def _check_moments(cal: Calibration, node: str, source: str) -> None:
    _check_draws(cal, node, source)
    samples = cal.sample_array
    mean, cov, mean_se, cov_se, white = sample_moments(samples)
    sd = np.sqrt(np.clip(np.diagonal(cov, axis1=1, axis2=2), 0, None))  # (S, k)
    per_secret = lambda a: np.max(np.abs(a), axis=tuple(range(1, a.ndim)), keepdims=True)  # noqa: E731
    checks = (
        ("mean", cal.mean_array, mean, sd + np.abs(mean)),
        ("cov", cal.cov_array, cov, sd[:, :, None] * sd[:, None, :] + np.abs(cov)),
        ("mean_se", cal.mean_se, mean_se, np.broadcast_to(per_secret(mean_se), mean_se.shape)),
        ("cov_se", cal.cov_se, cov_se, np.broadcast_to(per_secret(cov_se), cov_se.shape)),
    )
    for name, stored, fresh, scale in checks:
        where = _worst(stored - fresh, scale)
        if where is not None:
            raise _refuse(source, _mismatch(cal, name, node, where, stored, fresh))
    where = _worst(cal.cov_se_white - white, np.broadcast_to(per_secret(white), white.shape))
    if where is not None:  # another eigenbasis is fine if the bound it gives is no larger (module notes)
        stored_f, fresh_f = shrink_factor(cal.cov_se_white, cal.z), shrink_factor(white, cal.z)
        low = np.flatnonzero(~(stored_f >= fresh_f * (1 - RTOL)))
        if low.size:
            i = int(low[0])
            raise _refuse(source, f"cov_se_white of secret {cal.secrets[i].label!r} in {node} giving the shrink factor "
                                  f"{stored_f[i]!r}, below {fresh_f[i]!r} recomputed from the stored samples (a "
                                  "covariance lower bound larger than the samples support)")


def _mismatch(cal: Calibration, name: str, node: str, where: tuple[int, ...], stored: np.ndarray,
              fresh: np.ndarray) -> str:
    secret = cal.secrets[where[0]].label
    comp = ", ".join(cal.component_names[c] for c in where[1:])
    return (f"{name} of secret {secret!r}, component {comp} in {node}: stored {stored[where]!r}, recomputed from the "
            f"stored samples {fresh[where]!r}")


def check_calibration(cal: Calibration, source: str) -> None:
    """Refuse a :class:`~bayespriv.Calibration` whose stored numbers do not follow from its stored samples.

    Parameters
    ----------
    cal : Calibration
        As built from a file (root, with its family members).
    source : str
        Names the file in the message.

    Raises
    ------
    UnverifiedCalibrationError
        Naming the quantity, the node (``root`` or ``member_XXX``), the secret and component, and both values.
    """
    for i, m in enumerate(cal.family):
        if m.finite_laws:
            _check_laws(m, f"member_{i:03d}", source)
        elif m.sample_array is not None:
            _check_moments(m, f"member_{i:03d}", source)
    if cal.finite_laws:
        _check_laws(cal, "root", source)
    elif cal.sample_array is not None:
        _check_moments(cal, "root", source)
    if cal.family:
        bounds = [m.pair_sensitivities(2, bound=True).max() for m in cal.family]
        worst = int(np.argmax(bounds))
        m = cal.family[worst]
        names = ("mean_array", "cov_array", "mean_se", "cov_se", "cov_se_white")
        same = all(np.array_equal(getattr(cal, n), getattr(m, n)) for n in names) and cal.z == m.z
        same = same and list(cal.finite_laws) == list(m.finite_laws) and all(
            np.array_equal(cal.finite_laws[s].points, m.finite_laws[s].points)
            and np.array_equal(cal.finite_laws[s].weights, m.finite_laws[s].weights) for s in cal.finite_laws)
        if not same:
            raise _refuse(source, f"a family whose root is not its worst member (member_{worst:03d}, L2 sensitivity "
                                  f"bound {bounds[worst]!r}; the root's is {cal.sensitivity(2, bound=True)!r})")


def check_chain(cal: ChainCalibration, source: str) -> None:
    """Refuse a :class:`~bayespriv.networks.ChainCalibration` whose max-influences do not follow from its chains.

    Raises
    ------
    UnverifiedCalibrationError
        Naming the chain, the position (i, a, b) and both values, or the Lipschitz constant.
    """
    from bayespriv.networks.quilts.chains import chain_influences

    t, w = cal.length, cal.window
    if not 1 <= w <= t - 1 or cal.influence.shape != (t, w + 1, w + 1):
        raise _refuse(source, f"an influence table of shape {cal.influence.shape} for length {t} and window {w}")
    fresh = np.stack([chain_influences(c, t, w) for c in cal.chains])
    stored = cal.member_influence_array()
    if stored.shape != fresh.shape:
        raise _refuse(source, f"member influences of shape {stored.shape} for {len(cal.chains)} chains")
    for name, a, b in (("member_influence", stored, fresh), ("influence", cal.influence, fresh.max(axis=0))):
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        diff = np.where(nan_a & nan_b, 0.0, a - b)
        where = _worst(diff, np.abs(np.nan_to_num(b)) + 1.0)
        if where is not None or not np.array_equal(nan_a, nan_b):
            where = where or tuple(int(i) for i in np.argwhere(nan_a != nan_b)[0])
            raise _refuse(source, f"{name} at {where}: stored {a[where]!r}, recomputed from the stored chains {b[where]!r}")
    try:
        need = float(np.abs(cal.query.record_sensitivity(t)).sum())
    except Exception:  # noqa: BLE001 - a query without a declared record sensitivity: not recomputable
        return
    if not cal.lipschitz >= need * (1 - RTOL):
        raise _refuse(source, f"lipschitz={cal.lipschitz!r}, below the query's record sensitivity {need!r} over "
                              f"{t} entries")


def check_quilt(cal: QuiltCalibration, source: str) -> None:
    """Refuse a :class:`~bayespriv.networks.QuiltCalibration` whose stored quilts do not score as stored.

    Raises
    ------
    UnverifiedCalibrationError
        Naming the sensitive node, the quilt and the quantity (split, Δ, max-influence, …).
    """
    index = {v: i for i, v in enumerate(cal.graph.nodes())}
    cols = [c for v in sorted(cal.queried, key=index.__getitem__) for c in cal.columns[v]]
    full = cal.query.column_sensitivity(cols, cal.n_records, ord=1) if cols else 0.0
    if not _close(cal.sensitivity, full):
        raise _refuse(source, f"sensitivity (Δ_A F) {cal.sensitivity!r}, recomputed from the query {full!r}")
    numerical, extra = False, []
    for v in cal.sensitive:
        for c in cal.candidates[v]:
            where = f"quilt {sorted(map(str, c.quilt.quilt))} of {v!r}"
            try:
                fresh = cal.evaluate(v, c.quilt)
            except Exception as exc:  # noqa: BLE001 - a split that is not the node's Markov quilt, or a bad node
                raise _refuse(source, f"{where} that is not a Markov quilt of the stored network ({exc})") from exc
            a, b = c.influence, fresh.influence
            for name, x, y in (("Δ_{A∩N} F", c.sensitivity, fresh.sensitivity), ("max-influence", a.value, b.value),
                               ("influence margin", a.margin, b.margin)):
                if not _close(x, y):
                    raise _refuse(source, f"{name} of the {where}: stored {x!r}, recomputed {y!r}")
            pa, pb = a.per_member, b.per_member
            if (pa is None) != (pb is None) or (pa is not None and (len(pa) != len(pb) or
                                                                    not all(map(_close, pa, pb)))):
                raise _refuse(source, f"per-member max-influences of the {where}: stored {pa!r}, recomputed {pb!r}")
            if bool(a.exact) != bool(b.exact):
                raise _refuse(source, f"exactness of the {where}: stored {a.exact!r}, recomputed {b.exact!r}")
            numerical |= not b.exact
            extra += list(b.assumptions)
    need = ("parameters_bayes_net",) + tuple(dict.fromkeys(extra))
    missing = [a for a in need if a not in cal.assumptions]
    if missing:
        raise _refuse(source, f"assumptions {list(cal.assumptions)!r} without {missing!r}, which its max-influences need")
    confidence = None if numerical else 1.0
    if cal.confidence != confidence:
        raise _refuse(source, f"confidence {cal.confidence!r}; its max-influences give {confidence!r}")


def _close(x: float, y: float) -> bool:
    x, y = float(x), float(y)
    if math.isinf(x) or math.isinf(y) or math.isnan(x) or math.isnan(y):
        return x == y or (math.isnan(x) and math.isnan(y))
    return abs(x - y) <= RTOL * max(abs(x), abs(y), 1.0)
