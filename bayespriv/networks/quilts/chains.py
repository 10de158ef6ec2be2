"""Window quilts of a Markov chain for MQM (Song, Wang & Chaudhuri 2017): exact max-influences.

For one attribute observed along a finite-state Markov chain
(:class:`~bayespriv.datamodels.parameters.chain.MarkovChain`),
:func:`calibrate_chain` computes the exact max-influence of every window
quilt {X_{i−a}, X_{i+b}} of every position and returns a
:class:`ChainCalibration`, independent of ε, from which MQM picks the quilt
for its ε (per chain θ for a family Θ).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bayespriv._validation import check_positive_int, fail, seal_fields, sealed
from bayespriv.datamodels.parameters.chain import MarkovChain
from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv.queries import Query
from bayespriv.calibration.provenance import FileProvenance

__all__ = ["ChainCalibration", "calibrate_chain"]


def _log_ratio_table(cond: np.ndarray) -> np.ndarray:
    """max over outcomes of log cond[s, x] − log cond[s', x] for every (s, s'): (k, k).

    ``cond[s, x] = P(outcome x | X_i = s)``; outcomes impossible under both are
    skipped; one impossible under s' only gives +inf.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        logc = np.log(cond)
        diff = logc[:, None, :] - logc[None, :, :]  # (s, s', x)
    both_zero = (cond[:, None, :] == 0) & (cond[None, :, :] == 0)
    diff = np.where(both_zero, -np.inf, diff)
    out = diff.max(axis=2)
    return np.where(np.isnan(out), -np.inf, out)


def chain_influences(chain: MarkovChain, length: int, window: int) -> np.ndarray:
    """e[i, a, b]: max-influence of the quilt {X_{i−a}, X_{i+b}} on X_i (0-based i).

    a = 0 / b = 0 means no quilt node on that side; entries whose node falls
    outside the chain are ``nan``. Exact: given X_i, the past and the future
    are independent, so the log-ratio is the sum of a backward and a forward
    term, maximised jointly over the pair (s, s') of values of X_i.
    """
    k = chain.k
    p, q = chain.transition, chain.initial
    powers = np.empty((window + 1, k, k))
    powers[0] = np.eye(k)
    for d in range(1, window + 1):
        powers[d] = powers[d - 1] @ p
    marg = np.empty((length, k))
    marg[0] = q
    for t in range(1, length):
        marg[t] = marg[t - 1] @ p
    fwd = np.full((window + 1, k, k), -np.inf)
    fwd[0] = 0.0
    for b in range(1, window + 1):
        fwd[b] = _log_ratio_table(powers[b])  # P(X_{i+b} = y | X_i = s) = P^b[s, y]
    out = np.full((length, window + 1, window + 1), np.nan)
    for i in range(length):
        possible = marg[i] > 0
        pair_ok = possible[:, None] & possible[None, :] & ~np.eye(k, dtype=bool)
        if not pair_ok.any():
            out[i] = 0.0
            continue
        back = np.full((window + 1, k, k), -np.inf)
        back[0] = 0.0
        for a in range(1, min(window, i) + 1):
            # P(X_{i−a} = x | X_i = s) = m_{i−a}[x] P^a[x, s] / m_i[s]
            with np.errstate(divide="ignore", invalid="ignore"):
                cond = (marg[i - a][:, None] * powers[a]).T / marg[i][:, None]
            cond = np.where(possible[:, None], cond, 0.0)
            back[a] = _log_ratio_table(cond)
        nb = min(window, length - 1 - i)
        na = min(window, i)
        total = back[: na + 1, None, :, :] + fwd[None, : nb + 1, :, :]  # (a, b, s, s')
        total = np.where(pair_ok, total, -np.inf)
        out[i, : na + 1, : nb + 1] = np.maximum(total.max(axis=(2, 3)), 0.0)
    return out


@seal_fields
@dataclass(frozen=True, eq=False)
class ChainCalibration:
    """What MQM needs (built by :func:`calibrate_chain`), independent of ε.

    Attributes
    ----------
    chains : tuple of MarkovChain
        Θ (the supremum of the max-influence is taken over them).
    length : int
        T, the number of entries (rows of the dataset).
    column : str
        The column holding the chain's states.
    query : Query
    lipschitz : float
        L: the largest change of F when one entry changes.
    window : int
        Largest distance of a quilt node from X_i searched.
    influence : ndarray (T, window + 1, window + 1)
        e_Θ({X_{i−a}, X_{i+b}} | X_i) (a or b = 0: no node on that side;
        ``nan`` where a node falls outside the chain): the max over chains.
    member_influence : ndarray (chains, T, window + 1, window + 1) or None
        e_θ of every chain θ (None: a single chain, equal to ``influence``).
    provenance : FileProvenance or None
        The file it was loaded from and whether it verified (None when
        computed in this process).
    """

    chains: tuple[MarkovChain, ...]
    length: int
    column: str
    query: Query
    lipschitz: float
    window: int
    influence: np.ndarray = field(repr=False)
    k: int = 1
    component_names: tuple[str, ...] = ()
    confidence: float = 1.0
    assumptions: tuple[str, ...] = ("markov_chain",)
    member_influence: np.ndarray | None = field(default=None, repr=False)
    provenance: FileProvenance | None = field(default=None, repr=False)

    @property
    def content_hash(self) -> str | None:
        """The verified SHA-256 content digest of the file this calibration was loaded from (see
        :attr:`Calibration.content_hash <bayespriv.Calibration.content_hash>`); None otherwise."""
        p = self.provenance
        return p.content_hash if p is not None and p.verified else None

    @property
    def n_records(self) -> int:
        """Records per dataset: the chain's entries T (:attr:`length`), one row each."""
        return self.length

    @property
    def query_fingerprint(self) -> None:
        """None: a chain calibration records no fingerprint of its query (the contract every calibration
        provides, :class:`~bayespriv.calibration.CalibrationLike`)."""
        return None

    @property
    def n_members(self) -> int:
        """Number of chains θ in Θ."""
        return len(self.chains)

    def member_influence_array(self) -> np.ndarray:
        """e_θ per chain: (chains, T, window + 1, window + 1)."""
        if self.member_influence is not None:
            return self.member_influence
        return np.broadcast_to(self.influence, (self.n_members, *self.influence.shape))

    def member_scores(self, epsilon: float) -> np.ndarray:
        """σ_θ(i, a, b) = card(N) / (ε − e_θ) per chain θ: (chains, T, window + 1, window + 1)."""
        e = self.member_influence_array()
        with np.errstate(divide="ignore", invalid="ignore"):
            s = self.nearby_counts()[None] / (epsilon - e)
        return np.where(np.isfinite(e) & (e < epsilon), s, np.inf)

    def to_netcdf(self, path: Any, *, seed: int | None = None, key: bytes | None = None) -> Any:
        """Save to a netCDF file, signed with ``key`` (default: the owner's key;
        :func:`~bayespriv.files.calibration_io.save_calibration`)."""
        from bayespriv._late import late

        return late("save_calibration")(self, path, seed=seed, key=key)

    def nearby_counts(self) -> np.ndarray:
        """card(N) for every (i, a, b): the entries strictly between the quilt nodes."""
        t, w = self.length, self.window
        i = np.arange(t)[:, None, None]
        a = np.arange(w + 1)[None, :, None]
        b = np.arange(w + 1)[None, None, :]
        left = np.where(a == 0, i, a - 1)  # entries before X_i in N
        right = np.where(b == 0, t - 1 - i, b - 1)
        return (left + 1 + right).astype(float)

    def scores(self, epsilon: float) -> np.ndarray:
        """σ(i, a, b) = card(N) / (ε − e), inf where e ≥ ε or the quilt leaves the chain."""
        e = self.influence
        with np.errstate(divide="ignore", invalid="ignore"):
            s = self.nearby_counts() / (epsilon - e)
        return np.where(np.isfinite(e) & (e < epsilon), s, np.inf)

    def __repr__(self) -> str:
        from bayespriv._late import late

        return late("chain_calibration_repr")(self)

    def _repr_html_(self) -> str:
        from bayespriv._late import late

        return late("chain_calibration_html")(self)


def calibrate_chain(
    chain: MarkovChain | Sequence[MarkovChain],
    query: Query,
    *,
    length: int,
    column: str | None = None,
    lipschitz: float | None = None,
    max_window: int | None = None,
) -> ChainCalibration:
    """Exact max-influences of every window quilt of a Markov chain (for MQM).

    Parameters
    ----------
    chain : MarkovChain or sequence of them
        Θ; a sequence is a family (each chain's max-influences are kept; MQM
        chooses the quilt per chain).
    query : Query
        F over the chain's column.
    length : int
        T, the number of entries.
    column : str, optional
        The column of the states (default: the query's only column).
    lipschitz : float, optional
        L (default: the L1 norm of :meth:`~bayespriv.Query.record_sensitivity`,
        available for counts, shares and bounded means).
    max_window : int, optional
        Largest a, b searched (default T − 1: every quilt). The search costs
        O(T · window² · k²); a smaller window only removes quilts, so the
        guarantee still holds (the trivial quilt is always kept).

    Returns
    -------
    ChainCalibration

    Notes
    -----
    Song, Wang & Chaudhuri (2017, §4, MQM for Markov chains) search quilts of
    the form {X_{i−a}, X_{i+b}} (and one-sided ones): any other quilt contains
    one of them with the same or a larger nearby set and, since marginalising
    cannot increase a max-ratio, no smaller max-influence.

    Examples
    --------
    The share of rainy days over 24 days of a two-state chain, for MQM:

    >>> import bayespriv as bp
    >>> chain = bp.MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5])
    >>> cal = bp.calibrate_chain(chain, bp.mean("rain", bounds=(0, 1)), length=24)
    >>> cal.length, cal.column, round(cal.lipschitz, 5)
    (24, 'rain', 0.04167)
    >>> mech = bp.mechanisms.MQM(cal, epsilon=1.0)
    >>> bool(mech.noise_scale[0] < 24 * cal.lipschitz / 1.0)  # less than treating all 24 days as one group
    True
    """
    chains = (chain,) if isinstance(chain, MarkovChain) else tuple(chain) if isinstance(chain, (list, tuple)) else None
    if not chains or not all(isinstance(c, MarkovChain) for c in chains):
        raise ParameterTypeError(f"chain must be a MarkovChain or a non-empty sequence of them; got {chain!r}")
    if len({c.states for c in chains}) != 1:
        raise ValidationError("chains of a family must share their states; got different state labels")
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    t = check_positive_int(length, "length", minimum=2)
    if column is None:
        if len(query.columns) != 1:
            raise fail("column", f"given when the query reads several columns {list(query.columns)!r}", None)
        column = query.columns[0]
    if column not in query.columns:
        raise fail("column", f"a column the query reads {list(query.columns)!r}", column)
    if len(query.columns) != 1:
        raise fail("query", "a query over the chain's column only", list(query.columns))
    if lipschitz is None:
        lip = float(np.abs(query.record_sensitivity(t)).sum())
    else:
        lip = float(lipschitz)
        if not (math.isfinite(lip) and lip >= 0):
            raise fail("lipschitz", "a finite number >= 0", lipschitz)
    w = t - 1 if max_window is None else min(check_positive_int(max_window, "max_window"), t - 1)
    if t * (w + 1) ** 2 * chains[0].k ** 2 > 5e8:
        raise fail("max_window", f"small enough that length·(window+1)²·k² ≤ 5e8 (length {t})", max_window)
    members = np.stack([chain_influences(c, t, w) for c in chains])
    infl = sealed(members.max(axis=0))
    members = sealed(members)
    kq = query.k or 1
    return ChainCalibration(chains, t, column, query, lip, w, infl, kq, query.component_names(kq),
                            member_influence=members if len(chains) > 1 else None)
