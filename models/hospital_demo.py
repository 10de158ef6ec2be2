"""The hospital experiment of §4.2 of *Attribute Privacy*, set beside the paper's values.

Zhang, Ohrimenko, Yang & Cummings, *Attribute Privacy* (FAccT 2022), calibrate the
Attribute-Private Gaussian Mechanism (APGM) for three averages of a hospital of 50 patients,
hiding whether the share of women is below or above 50%. This module computes what the
``bayespriv demo`` command prints: its header, one comparison column per query (calibrated,
exact and paper's Δ, Var, σ² and errors), the reasons why these numbers differ from the paper's,
and the table of the paper's Θ as a family of PyMC models. Every function returns data or text;
the command prints it.

Examples
--------
>>> from bayespriv.models import hospital_demo
>>> setting = hospital_demo.demo_setting(2022)
>>> setting.n_records, len(setting.pairs)
(50, 144)
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

import bayespriv as bp
from bayespriv.errors import PrivacyAssumptionWarning
from bayespriv.mechanisms import APGM
from bayespriv.privacy import gaussian_radius
from bayespriv.models import hospital as H

__all__ = [
    "DemoSetting",
    "QueryComparison",
    "COMPARISON_ROWS",
    "demo_setting",
    "header_lines",
    "compare_query",
    "comparison_column",
    "comparison_table",
    "classic_note",
    "guarantee_lines",
    "worst_pair_lines",
    "difference_lines",
    "FAMILY_HEADER",
    "family_table",
]


# -- formatting ---------------------------------------------------------------------------------
def _g(x: float) -> str:
    return f"{x:.4g}"


def _sigma2(x: float) -> str:
    if x == 0:
        return "0 (no noise)"
    return f"{x:.2f}" if abs(x) >= 0.01 else f"{x:.2g}"


def _f2(x: float) -> str:
    return f"{x:.2f}"


def _err(x: float) -> str:
    return "0 (no noise)" if x == 0 else f"{x:.2f}"


# -- the setting ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DemoSetting:
    """The hospital, its secrets and the simulated dataset of one demo run.

    Attributes
    ----------
    model : bayespriv.DataModel
        The paper's generator (:func:`hospital.hospital_model`).
    pairs : tuple of SecretPair
        Every share of women below 50% against every share above (:func:`hospital.secret_pairs`).
    secrets : tuple of DatasetSecret
        The secrets of ``pairs``, each once, in order of first appearance.
    below, above : tuple of float
        The shares of women below and above 50%, ascending.
    query_seeds : tuple of numpy.random.SeedSequence
        One seed per query of :data:`hospital.QUERIES`, in order.
    dataset : pandas.DataFrame
        The simulated hospital the release is made on.
    """

    model: bp.DataModel
    pairs: tuple[bp.SecretPair, ...]
    secrets: tuple[bp.DatasetSecret, ...]
    below: tuple[float, ...]
    above: tuple[float, ...]
    query_seeds: tuple[np.random.SeedSequence, ...]
    dataset: pd.DataFrame

    @property
    def n_records(self) -> int:
        """Patients per hospital."""
        return self.model.n_records

    @property
    def diameter(self) -> float:
        """d(U): the largest difference between a share above and a share below 50%."""
        return max(self.above) - min(self.below)


def demo_setting(seed: int) -> DemoSetting:
    """The paper's generator, its secret pairs, one seed per query and the simulated hospital.

    Parameters
    ----------
    seed : int
        Root of the calibration seeds and of the simulated hospital.

    Returns
    -------
    DemoSetting
    """
    model = H.hospital_model()
    pairs = H.secret_pairs(model.n_records)
    secrets = tuple(dict.fromkeys(s for p in pairs for s in p.secrets))
    shares = sorted(s.value for s in secrets)
    seeds = np.random.SeedSequence(seed).spawn(len(H.QUERIES) + 1)
    return DemoSetting(
        model=model,
        pairs=pairs,
        secrets=secrets,
        below=tuple(v for v in shares if v < 0.5),
        above=tuple(v for v in shares if v > 0.5),
        query_seeds=tuple(seeds[:-1]),
        dataset=H.sample_hospital(seeds[-1], model.n_records),
    )


def header_lines(setting: DemoSetting, *, epsilon: float, delta: float, n_draws: int, seed: int) -> list[str]:
    """The demo's opening lines: the paper, the secrets, the privacy parameters and the calibration.

    Parameters
    ----------
    setting : DemoSetting
    epsilon, delta : float
        The privacy parameters of the release.
    n_draws : int
        Datasets drawn per secret.
    seed : int
        The seed of the run.

    Returns
    -------
    list of str
        The lines, the last one empty.
    """
    below, above = setting.below, setting.above
    return [
        "bayespriv demo — the hospital of §4.2, Zhang, Ohrimenko, Yang & Cummings, Attribute Privacy (FAccT 2022)",
        f"  {setting.n_records} patients; hide whether the share of women is below or above 50%: every share "
        f"{below[0]:g}…{below[-1]:g} against every share {above[0]:g}…{above[-1]:g} "
        f"({len(setting.pairs)} pairs, {len(setting.secrets)} secrets)",
        f"  ε = {epsilon:g}, δ = {delta:g}; calibration: {n_draws} datasets per secret from the paper's generator "
        f"(seed {seed}), bounds jointly at 95% confidence",
        "",
    ]


# -- one query ------------------------------------------------------------------------------------
def _classic(calibration: bp.Calibration, epsilon: float,
             delta: float) -> tuple[APGM, tuple[warnings.WarningMessage, ...]]:
    """APGM with the classic constant on the theorem's route (``accountant="gaussian"``: the noise the constant
    itself gives, F taken as Gaussian) and its ε ≥ 1 warnings, recorded rather than raised."""
    caught = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", PrivacyAssumptionWarning)
        mech = APGM(calibration, epsilon=epsilon, delta=delta, gaussian_calibration="classic", accountant="gaussian")
    for w in record:
        if issubclass(w.category, PrivacyAssumptionWarning):
            caught.append(w)
        else:  # not ours to swallow
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return mech, tuple(caught)


@dataclass(frozen=True)
class QueryComparison:
    """One query's calibration, its mechanisms, the exact and the paper's values, and the release.

    Attributes
    ----------
    name : str
        The query's name (a key of :data:`hospital.QUERIES` and :data:`hospital.PAPER`).
    calibration : Calibration
        Calibrated on the generator.
    released : APGM
        APGM on ``calibration`` with its default accountant (the noise scaled until the accounted δ(ε) of the
        released law meets the request): the mechanism that releases.
    analytic, classic : APGM
        APGM on ``calibration`` with the analytic and the classic Gaussian constant on the theorem's route
        (``accountant="gaussian"``: F taken as Gaussian), to compare the constants.
    exact_analytic : APGM
        Analytic APGM on the generator's exact moments.
    paper_classic : APGM
        Classic APGM on the paper's (Δ, Var).
    exact_sensitivity, exact_variance : float
        The generator's exact Δ (max over pairs) and Var (min over secrets).
    true_answer : float
        The query on the simulated hospital.
    released_value : float
        The released mechanism's noisy value on it (noise from fresh OS entropy).
    release : Release
        That release, with its guarantee and the law of its noise.
    classic_warnings : tuple of warnings.WarningMessage
        The privacy-assumption warnings of the classic constant (ε ≥ 1).
    """

    name: str
    calibration: bp.Calibration
    released: APGM
    analytic: APGM
    classic: APGM
    exact_analytic: APGM
    paper_classic: APGM
    exact_sensitivity: float
    exact_variance: float
    true_answer: float
    released_value: float
    classic_warnings: tuple[warnings.WarningMessage, ...]
    release: bp.mechanisms.Release | None = None


def _exact_moments(name: str, setting: DemoSetting) -> dict[bp.DatasetSecret, tuple[float, float]]:
    """The generator's exact mean and variance of the query given each secret (closed form)."""
    return {s: H.exact_moments(name, s.value, setting.n_records) for s in setting.secrets}


def _moments_calibration(moments: Mapping[bp.DatasetSecret, tuple[float, float]], query: bp.Query,
                         setting: DemoSetting) -> bp.Calibration:
    """The calibration made of given moments per secret."""
    return bp.Calibration.from_moments(
        {s: [m] for s, (m, _) in moments.items()}, {s: [[v]] for s, (_, v) in moments.items()}, setting.pairs, query,
        n_records=setting.n_records,
    )


def _paper_calibration(name: str) -> bp.Calibration:
    """The paper's (Δ, Var) for its Θ as a calibration of one pair of shares, 0.25 against 0.5."""
    paper = H.PAPER[name]
    sa = bp.DatasetSecret.proportion("gender", "female", 0.25)
    sb = bp.DatasetSecret.proportion("gender", "female", 0.5)
    return bp.Calibration.from_moments(
        {sa: [0.0], sb: [paper.sensitivity]}, {sa: [[paper.variance]], sb: [[paper.variance]]}, bp.SecretPair(sa, sb)
    )


def compare_query(name: str, query: bp.Query, calibration: bp.Calibration, setting: DemoSetting, *,
                  epsilon: float, delta: float) -> QueryComparison:
    """Build the mechanisms of one query, on its calibration, the exact moments and the paper's values,
    and release on the simulated hospital.

    Parameters
    ----------
    name : str
        The query's name in :data:`hospital.QUERIES`.
    query : Query
    calibration : Calibration
        The query calibrated on ``setting.model`` and ``setting.pairs``.
    setting : DemoSetting
    epsilon, delta : float

    Returns
    -------
    QueryComparison
    """
    released = APGM(calibration, epsilon=epsilon, delta=delta)
    analytic = APGM(calibration, epsilon=epsilon, delta=delta, gaussian_calibration="analytic", accountant="gaussian")
    classic, classic_warnings = _classic(calibration, epsilon, delta)
    exact = _exact_moments(name, setting)
    exact_analytic = APGM(_moments_calibration(exact, query, setting), epsilon=epsilon, delta=delta,
                          gaussian_calibration="analytic")
    paper_classic, paper_warnings = _classic(_paper_calibration(name), epsilon, delta)
    release = released.release(setting.dataset)  # rng=None: fresh OS entropy
    return QueryComparison(
        name=name,
        calibration=calibration,
        released=released,
        analytic=analytic,
        classic=classic,
        exact_analytic=exact_analytic,
        paper_classic=paper_classic,
        exact_sensitivity=max(abs(exact[p.a][0] - exact[p.b][0]) for p in setting.pairs),
        exact_variance=min(v for _, v in exact.values()),
        true_answer=float(query(setting.dataset)[0]),
        released_value=float(release.value[0]),
        classic_warnings=classic_warnings + paper_warnings,
        release=release,
    )


# -- the comparison table -------------------------------------------------------------------------
#: The rows of the comparison table, (group, row), in the order of :func:`comparison_column`.
COMPARISON_ROWS: tuple[tuple[str, str], ...] = (
    ("sensitivity Δ", "calibrated estimate (max over pairs)"),
    ("sensitivity Δ", "calibrated 95% upper bound"),
    ("sensitivity Δ", "exact, generator"),
    ("sensitivity Δ", "paper (its Θ, d(U) = 0.25)"),
    ("variance Var(F|s)", "calibrated estimate (min over secrets)"),
    ("variance Var(F|s)", "calibrated 95% lower bound"),
    ("variance Var(F|s)", "exact, generator"),
    ("variance Var(F|s)", "paper (its Θ)"),
    ("noise σ²", "APGM, accounted law  ← released"),
    ("noise σ²", "APGM analytic, Gaussian F"),
    ("noise σ²", "APGM classic (comparison only)"),
    ("noise σ²", "APGM analytic on exact moments"),
    ("noise σ²", "paper's (Δ, Var), APGM classic"),
    ("release", "true answer (simulated hospital)"),
    ("release", "noisy release"),
    ("release", "expected |error|, released"),
    ("release", "expected |error|, APGM classic"),
    ("release", "expected |error|, paper's σ²"),
    ("release", "paper: reported |error| (100 runs)"),
    ("release", "paper: true average"),
)


def comparison_column(comparison: QueryComparison) -> list[str]:
    """One query's column of the comparison table, formatted, one entry per :data:`COMPARISON_ROWS`.

    Parameters
    ----------
    comparison : QueryComparison

    Returns
    -------
    list of str
    """
    cal, paper = comparison.calibration, H.PAPER[comparison.name]
    return [
        _g(cal.sensitivity(2)),
        _g(cal.sensitivity(2, bound=True)),
        _g(comparison.exact_sensitivity),
        _g(paper.sensitivity),
        _g(float(cal.variance()[0])),
        _g(float(cal.variance(bound=True)[0])),
        _g(comparison.exact_variance),
        _g(paper.variance),
        _sigma2(comparison.released.sigma2),
        _sigma2(comparison.analytic.sigma2),
        _sigma2(comparison.classic.sigma2),
        _sigma2(comparison.exact_analytic.sigma2),
        _sigma2(comparison.paper_classic.sigma2),
        _f2(comparison.true_answer),
        _f2(comparison.released_value),
        _err(float(comparison.released.expected_abs_error[0])),
        _err(float(comparison.classic.expected_abs_error[0])),
        _err(float(comparison.paper_classic.expected_abs_error[0])),
        paper.reported_error,
        _f2(paper.true_average),
    ]


def comparison_table(comparisons: Mapping[str, QueryComparison]) -> pd.DataFrame:
    """The comparison table: one column per query (:func:`comparison_column`), rows :data:`COMPARISON_ROWS`."""
    columns = {name: comparison_column(comparison) for name, comparison in comparisons.items()}
    return pd.DataFrame(columns, index=pd.MultiIndex.from_tuples(list(COMPARISON_ROWS)))


def classic_note(comparisons: Mapping[str, QueryComparison], *, epsilon: float, delta: float) -> str | None:
    """Why the classic rows are for comparison only, when the classic constant warned (ε ≥ 1); else None."""
    if not any(comparison.classic_warnings for comparison in comparisons.values()):
        return None
    c = math.sqrt(2 * math.log(1.25 / delta))
    return (f"note: the classic constant c = sqrt(2 ln(1.25/δ)) = {c:.4f} is proven only for ε < 1 (Dwork & Roth 2014, "
            f"Thm A.1); at ε = {epsilon:g} its rows are shown only to compare with the paper. The two constant rows take F "
            f"as Gaussian (the papers' route); the release scales the noise until the accounted δ(ε) of the law actually "
            f"released meets the request (valid for every ε, whatever the law of F).")


def guarantee_lines(comparisons: Mapping[str, QueryComparison]) -> list[str]:
    """The distinct guarantees of the released mechanisms, one line each, sorted."""
    guarantees = {str(comparison.released.guarantee) for comparison in comparisons.values()}
    return [f"guarantee of each release: {g}" for g in sorted(guarantees)]


# -- why the numbers differ from the paper's ------------------------------------------------------
def worst_pair_lines(comparisons: Mapping[str, QueryComparison]) -> list[str]:
    """The worst pair of each query (the one plotted), with a heading and a closing empty line."""
    lines = ["worst pair of each query (largest 95% bound on Δ; plotted):"]
    lines += [f"  {name:<24} {comparison.calibration.worst_pair.label}" for name, comparison in comparisons.items()]
    return lines + [""]


def _unconditional_weight(n_records: int) -> tuple[float, float]:
    """Mean and standard deviation of the average weight of a hospital drawn from the unconditional generator."""
    p_female, heights = H.P_FEMALE, H.HEIGHT_MEAN
    mean_height = p_female * heights["female"] + (1 - p_female) * heights["other"]
    mean = H.WEIGHT_SLOPE * mean_height + H.WEIGHT_INTERCEPT
    within_share = H.exact_moments("average weight", 0.5, n_records)[1]
    between_shares = (H.WEIGHT_SLOPE * (heights["other"] - heights["female"])) ** 2 * p_female * (1 - p_female) / n_records
    return mean, math.sqrt(within_share + between_shares)


def _erratum_lines(setting: DemoSetting) -> list[str]:
    """Reasons 1–3: the paper's d(U), its Θ against its generator, and its weight variance."""
    d_u, n = setting.diameter, setting.n_records
    scale = d_u / 0.25
    w, b, t = (H.PAPER[q] for q in H.QUERIES)
    return [
        f"  1. d(U) erratum. The pair set a ∈ (.25, .5), b ∈ (.5, .75) has diameter d(U) = 0.5 ({d_u:g} for the "
        f"shares {n} patients can have), but the paper's Δ multiply by d(U) = 0.25. With d(U) = {d_u:g} its own Θ "
        f"gives Δ = {w.sensitivity * scale:.4g} / {b.sensitivity * scale:.4g} / {t.sensitivity * scale:.4g}.",
        "  2. Θ is not the generator. The paper's Δ and Var come from a set Θ (weight slope k₁ ≤ 3.5, heights "
        "64–66 vs 69–71 with sd 3 / 8, blood-pressure difference 6–10 with sd 10, temperature difference 0–0.3 "
        "with sd 2), not from the generator its data are drawn from (slope 3.6, heights 65 vs 70 with sd 3, "
        "blood-pressure difference 6 with sd 3, no temperature difference, sd 0.5). We calibrate the generator: "
        "per unit of share of women the averages move by 18 / 6 / 0.",
        "  3. The paper's weight variance 4.5 = 15²/50 omits the height term 3.6²·3²/50 = 2.33 "
        f"(exact {H.exact_moments('average weight', 0.5, n)[1]:.4g}).",
    ]


def _method_lines(setting: DemoSetting, z: float, *, epsilon: float, delta: float) -> list[str]:
    """Reasons 4–7: classic against analytic constant, the calibration's confidence, temperature, the
    paper's reported errors and averages."""
    r_an = gaussian_radius(epsilon, delta, "analytic")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyAssumptionWarning)
        r_cl = gaussian_radius(epsilon, delta, "classic")
    w = H.PAPER["average weight"]
    uncond_mean, uncond_sd = _unconditional_weight(setting.n_records)
    return [
        f"  4. Classic vs analytic. At ε = {epsilon:g}, δ = {delta:g} the analytic radius r* = {r_an:.4f} (Balle & Wang) "
        f"exceeds the classic ε/c = {r_cl:.4f}{' (unproven at ε ≥ 1)' if epsilon >= 1 else ''}, so the analytic APGM needs "
        f"only {(r_cl / r_an) ** 2:.2f}× the classic term (Δ/r)², and its guarantee holds.",
        f"  5. Our Δ is an upper bound and Var a lower bound, jointly true with probability 0.95 over the "
        f"calibration's own sampling (Bonferroni, z = {z:.2f}); the 'exact moments' row shows what this "
        f"conservatism costs. More --draws narrows it.",
        "  6. Temperature is independent of gender in the generator: its true Δ is 0, the calibrated one is "
        "Monte-Carlo noise, and APGM adds noise only if (Δ/r*)² exceeds Var (the paper: σ² = 0.00022, 'no noise').",
        "  7. The paper's reported errors are 100-run averages of |N(0, σ²)|; the exact E|noise| = σ·sqrt(2/π) of "
        "its σ² is in the row \"expected |error|, paper's σ²\". Its true averages are of its own simulated "
        f"hospital, ours of one drawn with the seed; its average weight {w.true_average:.2f} is "
        f"{(w.true_average - uncond_mean) / uncond_sd:.1f} sd above what its generator gives "
        f"({uncond_mean:.1f} ± {uncond_sd:.1f}), another sign that its numbers come from a different setting.",
    ]


def difference_lines(setting: DemoSetting, comparisons: Mapping[str, QueryComparison], *,
                     epsilon: float, delta: float) -> list[str]:
    """"Why these numbers differ from the paper's": the seven reasons, with a heading and a closing empty line.

    Parameters
    ----------
    setting : DemoSetting
    comparisons : mapping of str to QueryComparison
        Per query, in the order of :data:`hospital.QUERIES`; the first one's calibration gives the
        confidence multiplier z.
    epsilon, delta : float

    Returns
    -------
    list of str
    """
    z = next(iter(comparisons.values())).calibration.z
    return (["Why these numbers differ from the paper's:"] + _erratum_lines(setting)
            + _method_lines(setting, z, epsilon=epsilon, delta=delta) + [""])


# -- the paper's Θ as a family --------------------------------------------------------------------
#: The lines printed before :func:`family_table`.
FAMILY_HEADER: tuple[str, ...] = (
    "The paper's Θ (§4.2, 'possible conditional distributions') as a family of PyMC models",
    "  (shares 0.26/0.48 vs 0.52/0.74; every corner of the paper's ranges; calibrated vs closed form):",
)


def family_table(*, n_draws: int | None = None, seed: int, epsilon: float, delta: float,
                 report: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Calibrate the hospital's Θ family (PyMC) per query and set it beside :func:`hospital.family_exact`.

    Parameters
    ----------
    n_draws : int, optional
        Datasets drawn per secret and member of the family. Default: what certifying δ needs
        (:func:`bayespriv.mechanisms.draws_for_delta` over the family's pairs and members), at least 2 000.
    seed : int
        Root of the calibration seeds (one per query, apart from those of :func:`demo_setting`).
    epsilon, delta : float
        The privacy parameters of the APGM row.
    report : callable, optional
        Called with a progress line before each query's family is calibrated, after its draws, and after
        its accounting.

    Returns
    -------
    pandas.DataFrame
        One column per query.
    """
    share = lambda p: bp.DatasetSecret.proportion("gender", 1, p)  # noqa: E731  (PyMC models code women as 1)
    pairs = bp.pairs_between([share(0.26), share(0.48)], [share(0.52), share(0.74)])
    rows = {}
    for (name, query), seed_q in zip(H.QUERIES.items(), np.random.SeedSequence([seed, 1]).spawn(len(H.QUERIES))):
        grid = {k: list(v) for k, v in H.QUERY_GRIDS[name].items()}
        family = H.hospital_family(H.N_RECORDS, grid)
        # what certifying δ needs, and never fewer than the calibration's own bounds ask for a large δ
        draws = n_draws or max(2000, bp.mechanisms.draws_for_delta(pairs, delta, members=len(family.members)))
        started = time.perf_counter()
        if report is not None:
            report(f"calibrating the PyMC family of {name}: {len(family.members)} members × {len(pairs)} pairs, "
                   f"{draws} datasets per secret and member …")
        cal = bp.calibrate(family, pairs, query, n_draws=draws, rng=seed_q)
        if report is not None:
            report(f"  drawn in {time.perf_counter() - started:.2f} s; accounting APGM on the released law …")
        exact = H.family_exact(name, H.N_RECORDS, grid, pairs)
        theta = ", ".join(f"{k}={v:g}" for k, v in (cal.worst_theta or {}).items())
        exact_theta = ", ".join(f"{k}={v:g}" for k, v in exact["worst_theta"].items())
        rows[name] = {
            "members": len(cal.family),
            "worst θ (calibrated)": theta,
            "worst θ (closed form)": exact_theta,
            "Δ estimate": _g(cal.sensitivity(2)),
            "Δ 95% bound": _g(cal.sensitivity(2, bound=True)),
            "Δ closed form": _g(exact["sensitivity"]),
            "min Var estimate": _g(float(cal.variance()[0])),
            "min Var 95% bound": _g(float(cal.variance(bound=True)[0])),
            "min Var closed form": _g(exact["variance_min"]),
            "APGM σ² (family)": _sigma2(APGM(cal, epsilon=epsilon, delta=delta).sigma2),
        }
        if report is not None:
            report(f"calibrated and accounted the PyMC family of {name}: {len(family.members)} members × "
                   f"{len(pairs)} pairs in {time.perf_counter() - started:.2f} s")
    return pd.DataFrame(rows)
