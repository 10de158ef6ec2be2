"""Markov quilt mechanisms: APMQM (attribute privacy) and MQM (Song et al. 2017).

Both add Laplace noise whose scale is the best Markov quilt's score: a quilt
X_Q of a sensitive node splits the network into a nearby part, whose change
the noise must cover, and a remote part, independent of the sensitive node
given X_Q; the quilt's own dependence on the sensitive node is paid from ε
through the max-influence e(X_Q | X_i).

* :class:`APMQM` — Algorithm 2 of Zhang, Ohrimenko, Yang & Cummings,
  *Attribute Privacy* (FAccT 2022), on a :class:`~bayespriv.networks.quilts.QuiltCalibration`
  of a network over distribution parameters (:class:`~bayespriv.networks.influence.ParameterNetwork`).
* :class:`MQM` — the Markov Quilt Mechanism of Song, Wang & Chaudhuri,
  *Pufferfish Privacy Mechanisms for Correlated Data* (SIGMOD 2017), for one
  attribute observed along a Markov chain, on a
  :class:`~bayespriv.networks.quilts.ChainCalibration`.

Neither takes a :class:`~bayespriv.Calibration` (there are no moments of F to
estimate): both implement the contract of :class:`~bayespriv.mechanisms.mechanism.Mechanism`
directly (guarantee and noise plan from the quilt calibration).
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from .._validation import check_real, described, fail
from bayespriv.networks.quilts import ChainCalibration, ParameterNetwork, QuiltCalibration, QuiltScore
from ..errors import ParameterTypeError, ValidationError
from .mechanism import Guarantee, Mechanism
from .release_path import check_mechanism_epsilon

if TYPE_CHECKING:
    from collections.abc import Iterable
    from bayespriv.networks.quilts import Quilt

__all__ = ["APMQM", "MQM", "ChainQuilt"]


def _check_beta(beta: Any) -> float:
    b = check_real("beta", beta)
    if not (0.0 < b < 1.0):
        raise fail("beta", "in the open interval (0, 1)", beta)
    return b


class _QuiltMechanism(Mechanism):
    """Shared set-up: a quilt calibration (no moments of F), pure ε, Laplace noise on every component.

    The guarantee rests on the network or chain Θ, not on the law of F: there is nothing to check
    on samples and no Gaussian approximation to relax (those belong to
    :class:`~bayespriv.mechanisms.sampled_moments.SampledMomentMechanism`).
    """

    def __init__(self, calibration: QuiltCalibration | ChainCalibration, *, epsilon: float) -> None:
        super().__init__(calibration, epsilon=epsilon)
        self.noise_kind = "laplace"

    def _compute_k(self) -> int:
        return int(self.calibration.k)

    def _compute_variables(self) -> tuple[str, ...]:
        return tuple(self.calibration.query.columns)

    @property
    def n_records(self) -> int:
        """Records (network nodes or chain length) per dataset."""
        return int(self.calibration.n_records)

    # release: the base class binds the dataset to ``n_records`` (the column sensitivities of APMQM
    # and the nearby counts of MQM were computed for that many records; another size is refused).

    def accuracy(self, beta: float) -> float:
        """α with P(‖M(X) − F(X)‖_∞ > α) ≤ β: ``b · ln(k/β)`` (exact for k = 1).

        |Lap(b)| exceeds t with probability e^{−t/b}; a union bound over the
        k components gives the sup-norm. (Theorem 4 of the attribute-privacy
        paper prints ``log(1/(2β))``, the one-sided tail: with it the
        two-sided error exceeds α with probability 2β, not β.)
        """
        beta = _check_beta(beta)
        return float(self.scale * math.log(self.k / beta))

    def _compute_guarantee(self) -> Guarantee:
        cal = self.calibration
        return Guarantee(self.epsilon, 0.0, cal.confidence, tuple(cal.assumptions), self.theorem)

    def _plan_noise(self) -> Any:
        return self._plan_additive_noise()


def _member_score(pick: QuiltScore, member: int, n_members: int, epsilon: float) -> float:
    """σ_θ(Q) = Δ_{A∩N} F / (ε − e_θ(X_Q | X_i)) of one member θ (0 when Δ = 0; inf when e_θ ≥ ε)."""
    e = float(pick.influence.member_values(n_members)[member])
    if not e < epsilon:
        return math.inf
    return 0.0 if pick.sensitivity == 0 else pick.sensitivity / (epsilon - e)


class APMQM(_QuiltMechanism):
    """Attribute-Private Markov Quilt Mechanism (Algorithm 2).

    For each sensitive attribute i, among its Markov quilts (Q, N, R) with
    max-influence e_Θ(X_Q | X_i) < ε, choose the least score

        σ_i = Δ_{A∩N} F / (ε − e_Θ(X_Q | X_i)),

    where A are the queried attributes and Δ_{A∩N} F the query's column
    sensitivity over those lying in the nearby set (0 when none is nearby:
    then the quilt costs no noise). The trivial quilt (Q = ∅, N = everything
    connected to i) scores Δ_A F / ε, Algorithm 2's starting value b_i. The
    release is F(X) + Lap(max_i σ_i) on each component.

    The network is over the attributes' **distribution parameters**, not
    over one record: each node is a parameter φ_j (a share, a mean) drawn
    once per dataset, and given the φ's every record draws attribute j from a
    law indexed by φ_j alone. It is declared as a
    :class:`~bayespriv.networks.influence.ParameterNetwork` (nodes →
    record columns); :func:`~bayespriv.networks.quilts.calibrate_quilts`
    refuses a bare pgmpy network and one whose states are record values. On
    a record-level network (like "asia", every record drawing every node) the
    quilt {dysp} of smoke would make a count of dysp free of noise although
    n records reveal the share of smokers (δ ≈ 0.49 at ε = 1 for shares 0.4
    vs 0.6 and n = 500): Theorem 3 does not cover that Θ. Use
    :class:`~bayespriv.BayesNetDataModel` with :func:`~bayespriv.calibrate`
    there.

    Parameters
    ----------
    calibration : QuiltCalibration
        From :func:`~bayespriv.networks.quilts.calibrate_quilts` on a
        network over parameters.
    epsilon : float
    quilts : mapping, optional
        Sensitive node -> a quilt to use instead of the minimiser (a set of
        nodes or a :class:`~bayespriv.networks.quilts.Quilt`), e.g. to
        reproduce a paper's choice. It must have e < ε; the guarantee is the
        same, the noise possibly larger.

    Attributes
    ----------
    chosen : mapping
        Sensitive node -> the :class:`~bayespriv.networks.quilts.QuiltScore`
        used; for a family, the one chosen for the binding member θ (the θ
        whose best quilt needs the most noise for that node).
    chosen_per_member : tuple of mappings
        For each member θ (in the family's order; one entry for a single
        network): sensitive node -> the quilt chosen for θ.
    binding_member : mapping
        Sensitive node -> the label of its binding member θ.
    scale : float
        The Laplace scale b = max_θ max_i min_Q σ_θ(Q, i) (0: released without noise).

    Raises
    ------
    ValidationError
        A forced quilt with e ≥ ε, or (only possible with forced quilts or
        an empty search) no quilt with e < ε; a QuiltCalibration built
        without a declared parameter network (``parameter_network`` None).

    Privacy
    -------
    Definition: ε-distributional attribute privacy (Definition 5): ε-Pufferfish
    privacy with secrets {φ_i ∈ Φ_a^i} on the parameters of the sensitive
    attributes, every pair of them, and Θ the network(s) over the parameters.

    Theorem 3 of Zhang, Ohrimenko, Yang & Cummings (FAccT 2022; proof in its
    Appendix D), with Algorithm 2. Assumptions (``parameters_bayes_net``): the
    φ are drawn once per dataset from the given Bayesian network(s) over
    parameters, and given them the attributes are independent, attribute j
    depending on φ_j alone (the paper's "naive" conditional independence) —
    the meaning of :class:`~bayespriv.networks.influence.ParameterNetwork`.
    This is stated by the user when wrapping the network and cannot be tested
    on its tables (a discrete node with record-valued states is refused).
    Bound: exact — the max-influences are computed exactly (discrete
    parameters) and the column sensitivities are closed forms; confidence 1.
    For continuous parameters (a PyMC model) the max-influence of a chosen
    quilt is a numerical estimate with a refinement margin (see
    :func:`~bayespriv.networks.influence.max_influence`): the guarantee
    then names ``"numerical_influence"`` and has confidence None (no
    probability is claimed for an estimate); an underestimated e would make
    the true loss exceed ε by at most the underestimate.

    *Per-θ quilts (families).* Pufferfish privacy (Definition 1) is a
    condition for each θ ∈ Θ separately: for every θ and pair of secrets,
    P(M(X) ∈ T | s_a, θ) ≤ e^ε P(M(X) ∈ T | s_b, θ). The proof of Theorem 3
    fixes θ and one quilt of X_i and bounds the log-ratio by
    e_θ(X_Q | X_i) + Δ_{A∩N} F / b, where e_θ is the max-influence under that
    θ alone (Definition 7 takes the sup over Θ only to make one quilt serve
    every θ). So for each (θ, i) any quilt with e_θ < ε and
    Δ_{A∩N} F / (ε − e_θ) ≤ b suffices, and the Laplace scale
    b = max_θ max_i min_Q Δ_{A∩N} F / (ε − e_θ(X_Q | X_i)) — the same noise
    for every θ, the quilt possibly differing per θ — satisfies the
    condition for every θ. It is never above Algorithm 2's
    max_i min_Q Δ / (ε − sup_θ e_θ) (a max of minima is at most the minimum
    of maxima). A forced quilt (``quilts=``) is used for every θ (it must
    have e_Θ < ε; its per-θ score uses e_θ).

    Notes on the paper: Algorithm 2 admits quilts with e ≤ ε and divides by
    ε − e; e = ε gives a division by zero, so we require e < ε. Theorem 4
    writes the accuracy as max{…, Δ_A F/ε}·log(1/(2β)); since every b_i ≤
    Δ_A F/ε the outer max should be the noise scale itself, and the two-sided
    Laplace tail needs log(1/β) — see :meth:`accuracy`. In Example 1 the
    second query (students taller than 66 in with SAT > 1300) is said to get
    noise Δ_{s}F / (ε − e(X_gndr | X_i)) from the quilt Q = {gndr}; for a
    count Δ_{s}F = Δ_{h,s}F = n, so that score exceeds the trivial quilt's
    n/ε and Algorithm 2 picks the trivial quilt (or a quilt with A ∩ N = ∅
    when ε allows). ``quilts=`` reproduces the example's choice.
    """

    theorem = "APMQM: Zhang, Ohrimenko, Yang & Cummings 2022 (Attribute Privacy), Theorem 3 / Algorithm 2"
    #: Releases sharing a valid quilt per (θ, sensitive node) compose linearly; the ledger checks the shared quilt
    #: (:meth:`valid_quilts`, :mod:`bayespriv.ledger.joint`).
    _composition: ClassVar[str] = "quilt"

    def __init__(
        self,
        calibration: QuiltCalibration,
        *,
        epsilon: float,
        quilts: Mapping[Hashable, Any] | None = None,
    ) -> None:
        check_mechanism_epsilon(epsilon)  # before any arithmetic on it
        if not isinstance(calibration, QuiltCalibration):
            raise ParameterTypeError(
                f"calibration must be a QuiltCalibration (from calibrate_quilts); got {type(calibration).__name__}"
            )
        if not isinstance(calibration.parameter_network, ParameterNetwork):
            raise fail("calibration", "a QuiltCalibration from calibrate_quilts, whose network is declared over "
                       "distribution parameters (parameter_network set)",
                       described("a QuiltCalibration with parameter_network=None"))
        super().__init__(calibration, epsilon=epsilon)
        forced = {} if quilts is None else quilts
        if not isinstance(forced, Mapping):
            raise ParameterTypeError(f"quilts must be a mapping sensitive node -> quilt; got {type(forced).__name__}")
        for key in forced:
            if key not in calibration.sensitive:
                raise fail("quilts", f"keyed by sensitive nodes {list(calibration.sensitive)!r}", key)
        eps = self.epsilon
        per_member: list[dict[Hashable, QuiltScore]] = [{} for _ in range(calibration.n_members)]
        sigma = np.zeros((calibration.n_members, len(calibration.sensitive)))
        for col, node in enumerate(calibration.sensitive):
            picks = self._forced(calibration, node, forced[node]) if node in forced else self._best(calibration, node)
            for m, pick in enumerate(picks):
                per_member[m][node] = pick
                sigma[m, col] = _member_score(pick, m, calibration.n_members, eps)
        binding = sigma.argmax(axis=0)  # per node, the member θ whose best quilt needs the most noise
        self.chosen = MappingProxyType({node: per_member[int(binding[c])][node]
                                        for c, node in enumerate(calibration.sensitive)})
        labels = calibration.member_labels
        self.chosen_per_member = tuple(MappingProxyType(d) for d in per_member)
        self._binding_index = {node: int(binding[c]) for c, node in enumerate(calibration.sensitive)}
        self.binding_member = MappingProxyType({node: labels[m] for node, m in self._binding_index.items()})
        self.scale = float(sigma.max())
        self._set_laplace(np.full(self.k, self.scale), np.eye(self.k))
        self._valid_json = json.dumps(self._valid_quilts(calibration, per_member), sort_keys=True)

    def valid_quilts(self) -> dict[str, dict[str, float]]:
        """The quilts this release's noise is valid for: per ``"θ|node"`` (member label and sensitive
        node, as text), each candidate quilt (its sorted nodes as JSON text) with e_θ(X_Q | X_i) < ε and
        Δ_{A∩N} F / (ε − e_θ) ≤ b, mapped to e_θ.

        The proof of Theorem 3 for a fixed θ and node holds with *any* such quilt, not only the chosen
        one; releases that share one for every (θ, node) compose linearly (see
        :mod:`bayespriv.ledger.joint`), which the ledger checks from these sets. Computed once at
        construction (a fresh copy at each call), so editing the public attributes changes nothing.
        """
        return json.loads(self._valid_json)

    def _valid_quilts(self, cal: QuiltCalibration, per_member: list[dict[Hashable, QuiltScore]]
                      ) -> dict[str, dict[str, float]]:
        eps, slack = self.epsilon, self.scale * (1.0 + 1e-12)
        out: dict[str, dict[str, float]] = {}
        for m, label in enumerate(cal.member_labels):
            for node in cal.sensitive:
                valid = {}
                for c in (*cal.candidates[node], per_member[m][node]):  # a forced quilt too
                    e = float(c.influence.member_values(cal.n_members)[m])
                    if e < eps and (c.sensitivity == 0 or c.sensitivity / (eps - e) <= slack):
                        valid[json.dumps(sorted(map(str, c.quilt.quilt)))] = e
                out[f"{label}|{node}"] = valid
        return out

    def _forced(self, calibration: QuiltCalibration, node: Hashable,
                quilt: Quilt | Iterable[Hashable]) -> list[QuiltScore]:
        eps = self.epsilon
        pick = calibration.evaluate(node, quilt)
        if not pick.max_influence < eps:
            why = "" if pick.influence.finite else f" ({pick.influence.reason})"
            raise ValidationError(
                f"quilts[{node!r}] must have a max-influence e < epsilon={eps:g}; got e = "
                f"{pick.max_influence:.6g} for {pick.quilt}{why}"
            )
        return [pick] * calibration.n_members

    def _best(self, calibration: QuiltCalibration, node: Hashable) -> list[QuiltScore]:
        eps = self.epsilon
        picks = [calibration.best(node, eps, member=m) for m in range(calibration.n_members)]
        if any(p is None for p in picks):
            least = min((c.max_influence for c in calibration.candidates[node]), default=math.inf)
            raise ValidationError(
                f"epsilon must exceed the max-influence of some Markov quilt of {node!r} (Algorithm 2 needs "
                f"e(X_Q | X_i) < ε); got epsilon={eps:g} with smallest e = {least:.6g}"
            )
        return picks  # type: ignore[return-value]

    def _compute_guarantee(self) -> Guarantee:
        """ε-Pufferfish, δ = 0; with the assumptions of the max-influences of the quilts actually used.

        When a chosen quilt's max-influence is a numerical estimate
        (continuous parameters), the guarantee names ``"numerical_influence"``
        (and ``"truncated_prior"`` if bounds restricted Θ) and claims no
        probability (confidence None); with exact max-influences only (e.g.
        the trivial quilt, e = 0) it is exact (confidence 1).
        """
        cal = self.calibration
        used = [c.influence for chosen in self.chosen_per_member for c in chosen.values()]
        extra = tuple(dict.fromkeys(a for inf in used for a in inf.assumptions))
        per_quilt = {a for scores in cal.candidates.values() for c in scores for a in c.influence.assumptions}
        base = tuple(a for a in cal.assumptions if a not in per_quilt)
        exact = all(inf.exact for inf in used)
        confidence = (cal.confidence if cal.confidence is not None else 1.0) if exact else None
        return Guarantee(self.epsilon, 0.0, confidence, base + extra, self.theorem)

    def _compute_protected(self) -> tuple[str, ...]:
        """The dataset columns governed by the sensitive parameters (the ledger charges these budgets);
        a latent sensitive parameter (no column) is charged under its node's name."""
        cal = self.calibration
        return tuple(dict.fromkeys(c for v in cal.sensitive for c in (cal.columns[v] or (str(v),))))

    def report(self) -> pd.DataFrame:
        """The chosen quilt per sensitive attribute: Q, N, R, e, Δ_{A∩N} F and score.

        For a family Θ, one row per (sensitive attribute, member θ): ``max_influence`` and ``score`` are that
        member's e_θ and σ_θ, ``theta`` names the member and ``binding`` marks the member whose score sets the
        noise for that attribute.
        """
        cal = self.calibration
        family = cal.n_members > 1
        labels = cal.member_labels
        rows = []
        for node in cal.sensitive:
            for m, chosen in enumerate(self.chosen_per_member):
                c = chosen[node]
                row = {
                    "sensitive": node,
                    "quilt": sorted(map(str, c.quilt.quilt)),
                    "nearby": sorted(map(str, c.quilt.nearby)),
                    "remote": sorted(map(str, c.quilt.remote)),
                    "max_influence": float(c.influence.member_values(cal.n_members)[m]),
                    "sensitivity": c.sensitivity,
                    "score": _member_score(c, m, cal.n_members, self.epsilon),
                }
                if family:
                    row["theta"] = labels[m]
                    row["binding"] = m == self._binding_index[node]
                rows.append(row)
        return pd.DataFrame(rows).set_index("sensitive")

    def __repr__(self) -> str:
        picks = "; ".join(f"{n}: {c.quilt}" for n, c in self.chosen.items())
        return f"APMQM(epsilon={self.epsilon:g}, scale={self.scale:.6g}, k={self.k}, quilts=[{picks}])"


@dataclass(frozen=True)
class ChainQuilt:
    """The best quilt {X_{i−a}, X_{i+b}} of one position of a chain.

    ``position`` is 0-based; ``before`` = a and ``after`` = b (0: no quilt node
    on that side); ``nearby`` = card(N); ``member``: the chain θ of a family
    whose e_θ is ``max_influence`` (None for a single chain).
    """

    position: int
    before: int
    after: int
    max_influence: float
    nearby: int
    score: float
    member: int | None = None

    @property
    def quilt(self) -> tuple[int, ...]:
        """Positions (0-based) of the quilt nodes."""
        out = []
        if self.before:
            out.append(self.position - self.before)
        if self.after:
            out.append(self.position + self.after)
        return tuple(out)


class MQM(_QuiltMechanism):
    """Markov Quilt Mechanism for one attribute along a Markov chain (Song et al. 2017).

    The dataset is one path X_1, …, X_T of a finite-state Markov chain in Θ
    (rows of the DataFrame, column ``calibration.column``). For each position
    i and window quilt X_Q = {X_{i−a}, X_{i+b}} (one-sided and empty quilts
    included) with e_Θ(X_Q | X_i) < ε,

        σ(X_Q) = card(X_N) / (ε − e_Θ(X_Q | X_i)),

    σ_max = max_i min_Q σ(X_Q), and the release is F(X) + Lap(L · σ_max) with
    L the query's Lipschitz constant in one entry. For a family of chains
    the minimum is taken per chain θ with e_θ:
    σ_max = max_θ max_i min_Q card(X_N) / (ε − e_θ(X_Q | X_i)).

    Parameters
    ----------
    calibration : ChainCalibration
        From :func:`~bayespriv.networks.quilts.calibrate_chain`.
    epsilon : float

    Attributes
    ----------
    sigma : ndarray (T,)
        σ_i = max_θ min_Q σ_θ(X_Q) per position.
    sigma_max : float
    worst : ChainQuilt
        The position attaining σ_max with its best quilt (and, for a family,
        the binding chain θ in ``member``).
    scale : float
        L · σ_max.

    Privacy
    -------
    Definition: ε-Pufferfish privacy with secrets {X_i = a} for every position
    i and state a of positive probability, every pair (X_i = a, X_i = b), and
    Θ the given chain(s) (Song, Wang & Chaudhuri 2017, the entry-privacy
    framework of their §4). Theorem: the privacy theorem of the Markov Quilt
    Mechanism (Song et al. 2017, §4), with the exact max-influence of every
    window quilt (their MQMExact search). Assumptions (``markov_chain``): the
    data is a path of a chain in Θ; F changes by at most L when one entry
    changes (exact for counts, shares and bounded means). Bound: exact.
    This protects the value of one entry, not a distribution parameter; use
    :class:`APMQM` for attribute privacy.

    Per-θ quilts (families): Pufferfish privacy holds θ by θ (Definition 2.1
    of Song et al.: the condition is for each θ ∈ Θ), and the proof of the
    MQM theorem, for a fixed θ, position i and quilt, bounds the log-ratio
    by e_θ(X_Q | X_i) + L card(X_N) / b. Hence any b with
    b ≥ L card(X_N) / (ε − e_θ) for *some* quilt of every (θ, i) works:
    b = L max_θ max_i min_Q σ_θ, never above the sup-over-Θ rule
    L max_i min_Q card(X_N) / (ε − sup_θ e_θ). The noise is the same for
    every θ; only the quilt used in the proof depends on θ.
    """

    #: MQM releases on the same Markov chain compose linearly (Song & Chaudhuri 2017): the ledger adds them.
    _composition: ClassVar[str] = "chain"
    theorem = "MQM: Song, Wang & Chaudhuri 2017 (Pufferfish Privacy Mechanisms for Correlated Data), §4"

    def __init__(self, calibration: ChainCalibration, *, epsilon: float) -> None:
        check_mechanism_epsilon(epsilon)  # before any arithmetic on it
        if not isinstance(calibration, ChainCalibration):
            raise ParameterTypeError(
                f"calibration must be a ChainCalibration (from calibrate_chain); got {type(calibration).__name__}"
            )
        super().__init__(calibration, epsilon=epsilon)
        scores = calibration.member_scores(self.epsilon)  # (members, T, w+1, w+1)
        m, t, w1, _ = scores.shape
        flat = scores.reshape(m, t, -1)
        best = flat.argmin(axis=2)  # (members, T)
        per = np.take_along_axis(flat, best[:, :, None], axis=2)[:, :, 0]
        binding = per.argmax(axis=0)  # per position, the chain needing the most noise
        per_node = per[binding, np.arange(t)]
        worst = int(np.argmax(per_node))
        self.sigma = per_node
        self.sigma_max = float(per_node[worst])
        if not math.isfinite(self.sigma_max):  # pragma: no cover - the trivial quilt has e = 0 < ε
            raise ValidationError(f"epsilon must exceed the max-influence of some quilt; got epsilon={self.epsilon:g}")
        self._best, self._binding = best, binding
        self.worst = self._chain_quilt(worst, int(binding[worst]))
        self.scale = float(calibration.lipschitz * self.sigma_max)
        self._set_laplace(np.full(self.k, self.scale), np.eye(self.k))

    def _chain_quilt(self, position: int, member: int) -> ChainQuilt:
        cal = self.calibration
        w1 = cal.window + 1
        a, b = divmod(int(self._best[member, position]), w1)
        e = float(cal.member_influence_array()[member, position, a, b])
        score = float(cal.member_scores(self.epsilon)[member, position, a, b])
        label = member if cal.n_members > 1 else None
        return ChainQuilt(int(position), a, b, e, int(cal.nearby_counts()[position, a, b]), score, label)

    def _compute_protected(self) -> tuple[str, ...]:
        return (self.calibration.column,)

    def quilt_of(self, position: int, member: int | None = None) -> ChainQuilt:
        """The best quilt of one (0-based) position at this ε, for chain ``member`` (default: the binding one)."""
        cal = self.calibration
        t = cal.length
        if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not 0 <= position < t:
            raise fail("position", f"an integer in [0, {t - 1}]", position)
        if member is None:
            member = int(self._binding[position])
        elif isinstance(member, bool) or not isinstance(member, (int, np.integer)) or not 0 <= member < cal.n_members:
            raise fail("member", f"None or an integer in [0, {cal.n_members - 1}]", member)
        return self._chain_quilt(int(position), int(member))

    def report(self) -> pd.DataFrame:
        """The best quilt of every position (per chain θ for a family: ``theta`` and ``binding`` columns)."""
        cal = self.calibration
        rows = []
        for i in range(cal.length):
            for m in range(cal.n_members):
                q = self._chain_quilt(i, m)
                row = {"position": i, "quilt": q.quilt, "before": q.before, "after": q.after,
                       "max_influence": q.max_influence, "nearby": q.nearby, "score": q.score}
                if cal.n_members > 1:
                    row["theta"] = m
                    row["binding"] = m == int(self._binding[i])
                rows.append(row)
        return pd.DataFrame(rows).set_index("position")

    def __repr__(self) -> str:
        return (f"MQM(epsilon={self.epsilon:g}, sigma_max={self.sigma_max:.6g}, scale={self.scale:.6g}, "
                f"T={self.calibration.length})")
