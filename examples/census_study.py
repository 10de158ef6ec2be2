"""The census study of Chen & Ohrimenko (AISTATS 2023, §5), reproduced and improved.

Task (§5.1): release five statistics of 100 census records (mean age, mean years
of education, number never married, number of women, mean weekly hours) while
hiding whether 45 % or 55 % of them earn more than $50K (Δp_I = 0.1), or, for
the work-class property, 48 % vs 52 % private-sector workers (Δp_W = 0.04).

The script writes a Markdown report with its figures:

* Table 2 — L2 error of ExpM(G), EigM(G), DauM(G), GroupDP(G) at ε = 0.2, 1, 5,
  δ = 1e-3, in the paper's setting (plug-in moments from 1000 subsets, the
  classic Gaussian constant), the paper's numbers beside ours;
* what a user gets with default arguments: each Gaussian-family mechanism
  (APGM, EigM, DauM, OptimalGaussian, ExpM(G), DirM(G)) accounted on the
  released law at ε = 0.2, 1, 5 from 20 000 and 1 000 draws — established?,
  requested (ε, δ), accounted δ and its method, L2 error, the likelihood-ratio
  attack's accuracy and n_leaked, and a half-noise twin of each;
* for comparison, moment calibrations under the papers' premises — the
  analytic Gaussian calibration (valid for every ε), moments that are exact
  for the resampling model or conservative 95 % bounds, ``OptimalGaussian``;
* Figure 2 (error against ε), Figure 3 (error against Δp, with record-level
  DP beside), Figure 4 / Table 3 (attack accuracy against ε);
* the measured wall time of the whole study.

    .venv/bin/python examples/census_study.py [--adult-dir DIR] [--out census-study] [--quick]

Needs the UCI Adult data (never committed; default ../shared/data/adult).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import bayespriv as bp  # noqa: E402
from bayespriv.audit import AttackTrials, ShadowTraining, TableRows, property_inference_attack  # noqa: E402
from bayespriv.audit.mechanism_table import calibration_rows, l2_error  # noqa: E402
from bayespriv.models.census import (  # noqa: E402
    DEFAULT_ADULT_DIR,
    census_model,
    census_query,
    income_pairs,
    load_adult,
    split_adult,
    workclass_pairs,
)

M = bp.mechanisms
DELTA = 1e-3
EPSILONS_TABLE = (0.2, 1.0, 5.0)

#: Table 2 of the paper (L2 error, income, Δp_I = 0.1, δ = 1e-3).
PAPER_TABLE2 = {
    "ExpM(G)": (177.28, 34.98, 7.11),
    "EigM(G)": (175.65, 34.87, 4.89),
    "DauM(G)": (69.85, 13.40, 1.24),
    "GroupDP(G)": (7394.67, 1539.93, 293.17),
}
#: Table 3 of the paper (attack accuracy, income, δ = 1e-3 column).
PAPER_TABLE3 = {
    "ExpM(G)": {0.2: 0.500, 1.0: 0.511, 5.0: 0.539},
    "EigM(G)": {0.2: 0.501, 1.0: 0.512, 5.0: 0.550},
    "DauM(G)": {0.2: 0.508, 1.0: 0.545, 5.0: 0.739},
}
PAPER_NO_DEFENCE = 0.75


# -- mechanisms -------------------------------------------------------------------------------
#: The papers' setting assumes equal covariances under the two secrets; on the census data that
#: assumption fails its check (the covariances at p = 0.45 and 0.55 differ, as the paper's C.1
#: admits), so these guarantees are NOT ESTABLISHED. The "honest" table below drops the assumption.
EQUAL = dict(covariance="equal")


def paper_mechanisms(cal: bp.Calibration, eps: float) -> dict[str, M.Mechanism]:
    """The paper's Gaussian variants: classic constant (its proof needs ε < 1)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bp.PrivacyAssumptionWarning)
        kw = dict(epsilon=eps, delta=DELTA, gaussian_calibration="classic")
        return {
            "ExpM(G)": M.ExpM(cal, **kw, accountant="gaussian"),
            "EigM(G)": M.EigM(cal, **kw, **EQUAL, accountant="gaussian"),
            "DauM(G)": M.DauM(cal, **kw, **EQUAL, accountant="gaussian"),
            "GroupDP(G)": M.GroupDP(cal, **kw),
        }


def our_mechanisms(cal: bp.Calibration, eps: float) -> dict[str, M.Mechanism | str]:
    """Analytic Gaussian calibration (valid for every ε) and the least-noise mechanism, on the papers' route
    (``accountant="gaussian"``: the moments' Gaussian fits; the released law is accounted in :func:`user_table`).

    A mechanism that refuses the calibration (DauM when the confidence box of
    the mean difference leaves its direction uncertain) maps to the reason."""
    kw = dict(epsilon=eps, delta=DELTA, accountant="gaussian")
    out: dict[str, M.Mechanism | str] = {}
    for name, cls in (("ExpM(G)", M.ExpM), ("EigM(G)", M.EigM), ("DauM(G)", M.DauM),
                      ("OptimalGaussian", M.OptimalGaussian), ("GroupDP(G)", M.GroupDP)):
        extra = EQUAL if cls in (M.EigM, M.DauM, M.OptimalGaussian) else {}
        try:
            out[name] = cls(cal, **kw, **extra) if cls is not M.GroupDP else cls(cal, epsilon=eps, delta=DELTA)
        except bp.ValidationError as err:
            out[name] = f"refused: {str(err).split(';')[0]}"
    return out


HONEST = (("APGM", M.APGM), ("EigM(G)", M.EigM), ("DauM(G)", M.DauM), ("OptimalGaussian", M.OptimalGaussian))


def honest_table(calibrations: dict[str, bp.Calibration], rng: np.random.Generator, eps: float = 1.0) -> pd.DataFrame:
    """Each Gaussian mechanism at (ε, δ) = (1, 1e-3), analytic: assuming equal covariances (the
    papers; the check fails on these data) beside the honest calibration for unequal covariances
    (noise shape kept, scaled by the exact privacy curve over the confidence box) — or the reason
    it refuses."""
    rows = []
    for label, cal in calibrations.items():
        for name, cls in HONEST:
            row = {"calibration": label, "mechanism": name}
            for mode in ("equal", "auto"):
                key = "equal covariances (assumed)" if mode == "equal" else "honest (unequal covariances)"
                route = {"accountant": "gaussian"} if mode == "equal" else {}
                try:
                    mech = cls(cal, epsilon=eps, delta=DELTA, covariance=mode, **route)
                except bp.ValidationError as err:
                    row[key], row[key + ": guarantee"] = np.nan, f"refused: {str(err).split(';')[0]}"
                    continue
                row[key] = l2_error(mech, rng, 5000)
                g = mech.guarantee
                row[key + ": guarantee"] = ("FAILED: " + ", ".join(g.failed_assumptions) if g.failed_assumptions
                                            else "holds (assumes " + ", ".join(g.assumptions) + ")")
            rows.append(row)
    return pd.DataFrame(rows)


# -- what a user gets: default arguments, accounted on the released law ---------------------------
#: The Gaussian-family mechanisms with default arguments (``accountant="auto"``): each keeps its noise shape
#: and scales it to the least factor whose accounted δ(ε) of the released law meets the request.
def user_table(model: bp.DataModel, pair: bp.SecretPair, query: bp.Query, *, draws: Iterable[int] = (20_000, 1000),
               epsilons: Iterable[float] = EPSILONS_TABLE, seed: int = 0, n_trials: int = 2000,
               twin_epsilon: float = 1.0, reference_draws: int = 2000,
               names: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per draw count, ε and Gaussian-family mechanism (default arguments), plus a half-noise twin of
    each at ``twin_epsilon`` (its accounted δ and attack show what the accountant guards against). The attacker's
    densities come from ``reference_draws`` held-out draws per secret (the same for every row). ``names``: a
    subset of :data:`bayespriv.audit.mechanism_table.FAMILY` (default all)."""
    rows = []
    seeds = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(seeds[1])
    reference = bp.calibrate(model, pair, query, n_draws=reference_draws, rng=seeds[2])
    trials = AttackTrials(n_trials=n_trials, reference_draws=reference)
    for n in draws:
        t = time.perf_counter()
        cal = bp.calibrate(model, pair, query, n_draws=n, rng=seeds[0])
        for eps in epsilons:
            rows += [{"draws": n, "ε": eps, **row} for row in
                     calibration_rows(cal, model, pair, eps, rows=TableRows(names=names, twin=eps == twin_epsilon),
                                      rng=rng, trials=trials)]
        print(f"  {n} draws: {time.perf_counter() - t:.1f} s", flush=True)
    return pd.DataFrame(rows)


def best_established(table: pd.DataFrame, eps: float = 1.0) -> pd.Series:
    """The established Gaussian-family row of least L2 error at ``eps`` (largest draw count)."""
    ok = table[(table["ε"] == eps) & (table["established"] == True) & (table["draws"] == table["draws"].max())]  # noqa: E712
    return ok.loc[ok["L2 error"].idxmin()]


def exact_calibration(model: bp.EmpiricalDataModel, pairs: bp.SecretPair, query: bp.Query) -> bp.Calibration:
    """Moments of F under the resampling model, exactly (no Monte-Carlo error)."""
    moments = {s: model.moments(s, query) for s in pairs.secrets}
    return bp.Calibration.from_moments({s: m[0] for s, m in moments.items()}, {s: m[1] for s, m in moments.items()},
                                       pairs, query, n_records=model.n_records)


# -- report helpers -------------------------------------------------------------------------------
def markdown_table(df: pd.DataFrame, floatfmt: str = "{:.2f}") -> str:
    df = df.reset_index()
    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = []
    for _, r in df.iterrows():
        cells = [(floatfmt.format(v) if np.isfinite(v) else "–") if isinstance(v, (float, np.floating)) else str(v)
                 for v in r]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join([head, sep, *rows])


def timed(label: str, timings: dict[str, float]) -> Callable:
    class _T:
        def __enter__(self):
            self.t = time.perf_counter()

        def __exit__(self, *exc):
            timings[label] = time.perf_counter() - self.t
            print(f"  {label}: {timings[label]:.1f} s", flush=True)

    return _T()


# -- the study ------------------------------------------------------------------------------------
def run(adult_dir: Path, out: Path, *, draws: int = 1000, repetitions: int = 50, seed: int = 0,
        quick: bool = False) -> dict[str, object]:
    start = time.perf_counter()
    timings: dict[str, float] = {}
    out.mkdir(parents=True, exist_ok=True)
    root = np.random.SeedSequence(seed)
    (s_split, s_cal, s_cons, s_err, s_fig2, s_fig3, s_att) = root.spawn(7)
    rng_err = np.random.default_rng(s_err)

    table = load_adult(adult_dir)
    modeling, auxiliary, testing = split_adult(table, s_split)
    model = census_model(modeling, n_records=100)
    query, pairs = census_query(), income_pairs(0.1)
    results: dict[str, object] = {}

    print("Table 2 and its improvement", flush=True)
    with timed("calibrations (income, Δp = 0.1)", timings):
        plug_in = bp.calibrate(model, pairs, query, n_draws=draws, rng=s_cal, confidence=None)
        conservative = bp.calibrate(model, pairs, query, n_draws=draws, rng=s_cons, confidence=0.95)
        # Sampling is cheap for this model: a user would simply draw more and tighten the bounds.
        conservative_big = bp.calibrate(model, pairs, query, n_draws=20 * draws, rng=s_cons.spawn(1)[0],
                                        confidence=0.95)
        exact = exact_calibration(model, pairs, query)
    with timed("Table 2", timings):
        rows = []
        for i, eps in enumerate(EPSILONS_TABLE):
            for name, mech in paper_mechanisms(plug_in, eps).items():
                rows.append({"mechanism": name, "ε": eps, "paper": PAPER_TABLE2[name][i],
                             "ours (same setting)": l2_error(mech, rng_err)})
        t2 = pd.DataFrame(rows)
        t2["ratio"] = t2["ours (same setting)"] / t2["paper"]
        rows = []
        for label, cal in (("exact moments", exact), (f"95% conservative bounds, {draws} draws", conservative),
                           (f"95% conservative bounds, {20 * draws} draws", conservative_big)):
            for eps in EPSILONS_TABLE:
                for name, mech in our_mechanisms(cal, eps).items():
                    refused = isinstance(mech, str)
                    rows.append({"calibration": label, "mechanism": name, "ε": eps,
                                 "L2 error": np.nan if refused else l2_error(mech, rng_err),
                                 "guarantee": mech if refused else str(mech.guarantee)})
        ours = pd.DataFrame(rows)
    with timed("honest calibration (unequal covariances)", timings):
        # exact moments only: calibrations from draws are accounted on the released law in the next section
        results["honest"] = honest_table({"exact moments": exact}, rng_err)
    print("What a user gets: default arguments, accounted on the released law", flush=True)
    with timed("default arguments (accountant on the released law)", timings):
        if quick:  # two mechanisms, ε = 1, from draws that can certify δ (the paper's 1 000 cannot)
            results["user"] = user_table(model, pairs, query, draws=(20 * draws,), epsilons=(1.0,), seed=seed,
                                         names=("APGM", "OptimalGaussian"))
        else:
            results["user"] = user_table(model, pairs, query, draws=(20 * draws, draws), seed=seed)
    best_paper = PAPER_TABLE2["DauM(G)"][1]
    opt = ours[(ours["mechanism"] == "OptimalGaussian") & (ours["ε"] == 1.0)].set_index("calibration")["L2 error"]
    results["table2"] = t2
    results["ours"] = ours
    results["optimal_vs_daum"] = {k: v / best_paper for k, v in opt.items()}

    print("Figure 2: error against ε", flush=True)
    eps_grid = np.geomspace(0.1, 10, 9 if quick else 13)
    rng2 = np.random.default_rng(s_fig2)
    with timed("Figure 2", timings):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
        settings = [("income, Δp_I = 0.1", pairs, plug_in, exact),
                    ("work class, Δp_W = 0.04", workclass_pairs(0.04), None, None)]
        for ax, (title, prs, pl, ex) in zip(axes, settings):
            if pl is None:
                s_a, s_b = np.random.SeedSequence(seed + 1).spawn(2)
                pl = bp.calibrate(model, prs, query, n_draws=draws, rng=s_a, confidence=None)
                ex = exact_calibration(model, prs, query)
            curves: dict[str, list[float]] = {}
            for eps in eps_grid:
                for name, mech in paper_mechanisms(pl, eps).items():
                    if name != "GroupDP(G)":
                        curves.setdefault(f"{name} paper setting", []).append(l2_error(mech, rng2, 5000))
                for name, mech in our_mechanisms(ex, eps).items():
                    if name in ("DauM(G)", "OptimalGaussian"):
                        curves.setdefault(f"{name} analytic, exact", []).append(l2_error(mech, rng2, 5000))
            for label, ys in curves.items():
                ax.plot(eps_grid, ys, marker="o", ms=3, label=label, ls="-" if "paper" in label else "--")
            ax.set(xscale="log", yscale="log", xlabel="ε", ylabel="L2 error", title=title)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "figure2_error_vs_epsilon.png", dpi=120)
        plt.close(fig)

    print("Figure 3: error against Δp", flush=True)
    dps = np.round(np.arange(0.02, 0.41, 0.04 if quick else 0.02), 2)
    rng3 = np.random.default_rng(s_fig3)
    with timed("Figure 3", timings):
        rows = []
        for dp in dps:
            prs = income_pairs(float(dp))
            ex = exact_calibration(model, prs, query)
            for name, mech in paper_mechanisms(ex, 1.0).items():
                if name != "GroupDP(G)":
                    rows.append({"Δp": dp, "curve": f"{name} (classic)", "L2 error": l2_error(mech, rng3, 5000)})
            rows.append({"Δp": dp, "curve": "OptimalGaussian (analytic)",
                         "L2 error": l2_error(M.OptimalGaussian(ex, epsilon=1.0, delta=DELTA, **EQUAL), rng3, 5000)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bp.PrivacyAssumptionWarning)
            dp_mech = M.GroupDP(exact, epsilon=1.0, delta=DELTA, group_size=1, gaussian_calibration="classic")
        dp_err = l2_error(dp_mech, rng3)
        fig3 = pd.DataFrame(rows)
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, g in fig3.groupby("curve"):
            ax.plot(g["Δp"], g["L2 error"], marker="o", ms=3, label=label)
        ax.axhline(dp_err, color="k", ls=":", label="record-level DP (Gaussian, classic)")
        ax.set(yscale="log", xlabel="Δp_I", ylabel="L2 error", title="ε = 1, δ = 1e-3")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "figure3_error_vs_delta_p.png", dpi=120)
        plt.close(fig)
        crossing = fig3[(fig3["curve"] == "DauM(G) (classic)") & (fig3["L2 error"] <= dp_err)]["Δp"].max()
    results["figure3"] = fig3
    results["dp_error"] = dp_err
    results["daum_beats_dp_up_to"] = crossing

    print("Figure 4 / Table 3: attack accuracy against ε", flush=True)
    attack_eps = (0.1, 1.0, 5.0) if quick else (0.1, 0.2, 1.0, 5.0, 10.0)
    reps = max(5, repetitions // 5) if quick else repetitions
    train_model = census_model(auxiliary, n_records=100)
    test_model = census_model(testing, n_records=100)
    att_seeds = iter(np.random.SeedSequence(s_att.entropy, spawn_key=s_att.spawn_key).spawn(200))
    with timed("attacks", timings):
        informed_training = ShadowTraining(repetitions=reps)
        papers_training = ShadowTraining(repetitions=reps, noisy_shadow=False)
        none = property_inference_attack(None, train_model, test_model, pairs, query=query, shadow=informed_training,
                                         rng=next(att_seeds))
        rows = []

        def attack(mech, name, eps, paper):
            seed_ = next(att_seeds)
            # Same seed for both protocols: same datasets, only the attacker's training differs.
            as_paper = property_inference_attack(mech, train_model, test_model, pairs, query=query,
                                                 shadow=papers_training, rng=seed_)
            if name == "GroupDP(G)":  # its noise swamps F whatever the attacker trains on
                informed = as_paper
            else:
                informed = property_inference_attack(mech, train_model, test_model, pairs, query=query,
                                                     shadow=informed_training, rng=seed_)
            rows.append({"mechanism": name, "ε": eps, "paper": paper, "accuracy (paper's protocol)": as_paper.accuracy,
                         "accuracy (informed attacker)": informed.accuracy})

        for eps in attack_eps:
            for name, mech in paper_mechanisms(plug_in, eps).items():
                attack(mech, name, eps, PAPER_TABLE3.get(name, {}).get(eps, np.nan))
            attack(M.OptimalGaussian(exact, epsilon=eps, delta=DELTA, **EQUAL), "OptimalGaussian (analytic, exact)", eps,
                   np.nan)
        attacks = pd.DataFrame(rows)
        fig, ax = plt.subplots(figsize=(6, 4))
        for i, (label, g) in enumerate(attacks.groupby("mechanism")):
            color = f"C{i}"
            ax.plot(g["ε"], g["accuracy (paper's protocol)"], marker="o", ms=3, color=color, label=label)
            ax.plot(g["ε"], g["accuracy (informed attacker)"], marker="x", ms=4, ls="--", color=color)
        ax.axhline(none.accuracy, color="k", ls=":", label="no defence")
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.set(xscale="log", xlabel="ε", ylabel="attack accuracy", title="income, 0.45 vs 0.55, δ = 1e-3")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "figure4_attack_accuracy.png", dpi=120)
        plt.close(fig)
    results["attack_none"] = none.accuracy
    results["attacks"] = attacks

    elapsed = time.perf_counter() - start
    results["elapsed"] = elapsed
    write_report(out / "report.md", results, timings, draws=draws, reps=reps, seed=seed, quick=quick)
    print(f"report: {out / 'report.md'} ({elapsed:.1f} s)")
    return results


def write_report(path: Path, r: dict, timings: dict[str, float], *, draws: int, reps: int, seed: int,
                 quick: bool) -> None:
    t2: pd.DataFrame = r["table2"]
    ours: pd.DataFrame = r["ours"]
    attacks: pd.DataFrame = r["attacks"]
    lines = [
        "# Census study: distribution privacy on UCI Adult",
        "",
        "Chen & Ohrimenko (AISTATS 2023), §5, reproduced with `bayespriv` (`examples/census_study.py`, "
        f"seed {seed}{', quick mode' if quick else ''}). Data: 45 222 complete Adult records, split 25 222 modeling / "
        "10 000 auxiliary / 10 000 testing. Query: mean age, mean education years, number never married, "
        "number female, mean weekly hours over n = 100 records. Secret: income share 0.45 vs 0.55. δ = 1e-3. "
        "L2 error = E‖noise‖₂ (20 000 noise draws per cell; the paper averages 50 releases).",
        "",
        "## Table 2 in the paper's setting",
        "",
        f"Plug-in moments from {draws} resampled subsets per secret, classic Gaussian constant "
        "c = √(2 ln(1.25/δ)) — whose proof needs ε < 1, so the ε = 1 and ε = 5 columns carry no guarantee.",
        "",
        markdown_table(t2.pivot(index="mechanism", columns="ε", values="paper").add_prefix("paper ε=")
                       .join(t2.pivot(index="mechanism", columns="ε", values="ours (same setting)").add_prefix("ours ε="))
                       .join(t2.pivot(index="mechanism", columns="ε", values="ratio").add_prefix("ratio ε="))),
        "",
        "## Moment calibrations (the papers' premises), for comparison",
        "",
        "The papers' route (`accountant=\"gaussian\"`): noise from the moments' Gaussian fits, so each guarantee "
        "rests on `gaussian_query` (and `equal_covariance` where stated), which the checks below test. "
        "Analytic Gaussian calibration (valid for every ε). *Exact moments*: the resampling model's moments "
        "in closed form (confidence 1); *95% conservative bounds*: sampled moments with simultaneous "
        "confidence bounds (upper for mean differences, Loewner-lower for covariances), from as many subsets "
        "as the paper and from 20 times more (2 × 20 000 subsets take well under a second here). `OptimalGaussian` is "
        "the least-trace Gaussian noise meeting Corollary A.1 for the pair.",
        "",
        markdown_table(ours.pivot_table(index=["calibration", "mechanism"], columns="ε", values="L2 error")
                       .add_prefix("ε=")),
        "",
    ]
    for label, ratio in r["optimal_vs_daum"].items():
        lines.append(f"* OptimalGaussian at ε = 1 ({label}): **{ratio:.3f} ×** the paper's best (DauM(G), 13.40).")
    lines += [
        "",
        "Guarantees (ε = 1):",
        "",
    ]
    for _, row in ours[ours["ε"] == 1.0].iterrows():
        lines.append(f"* {row['calibration']}, {row['mechanism']}: {row['guarantee']}")
    honest: pd.DataFrame = r["honest"]
    eq, hon = "equal covariances (assumed)", "honest (unequal covariances)"
    lines += user_section(r["user"])
    lines += [
        "",
        "## Honest calibration: no equal-covariance assumption (ε = 1, δ = 1e-3, analytic)",
        "",
        "Every table above assumes, as the papers do, that F has the same covariance under both secrets. "
        "On these data that check FAILS (the covariances at income share 0.45 and 0.55 differ), so those "
        "guarantees are not established and `release` refuses them unless the caller opts in. The honest "
        "calibration (the default, `covariance=\"auto\"`) keeps each mechanism's noise shape and scales it by "
        "the smallest factor whose exact privacy curve of N(μ_a, Σ_a + S) vs N(μ_b, Σ_b + S) meets (ε, δ) "
        "(`bayespriv.privacy.privacy_loss`; over the confidence box for sampled bounds). Its guarantee "
        "still assumes `gaussian_query`. Where that check FAILS too (20 000 draws let Shapiro–Wilk see that "
        "counts and means over 100 records are not exactly Gaussian), `release` refuses: the routes there are "
        "`relaxed(eta)` (Theorem 4.6), `with_extra_laplace` (4.7) or `APGMnG`.",
        "",
        markdown_table(honest.set_index(["calibration", "mechanism"])[[eq, hon]]),
        "",
    ]
    for _, row in honest.iterrows():
        lines.append(f"* {row['calibration']}, {row['mechanism']}: assumed equal → {row[eq + ': guarantee']}; "
                     f"honest → {row[hon + ': guarantee']}")
    lines += [
        "",
        "## Figure 2: error against ε",
        "",
        "![error against epsilon](figure2_error_vs_epsilon.png)",
        "",
        "## Figure 3: error against Δp (ε = 1)",
        "",
        "![error against delta p](figure3_error_vs_delta_p.png)",
        "",
        f"Record-level DP (Gaussian mechanism, classic, group size 1) has L2 error {r['dp_error']:.2f}; "
        f"DauM(G) needs less noise for Δp_I ≤ {r['daum_beats_dp_up_to']} (paper: ≤ 0.12). Note that "
        "record-level DP does not protect the property at all.",
        "",
        "## Figure 4 / Table 3: property-inference attack",
        "",
        f"Meta-classifier (standardized logistic regression) on 200 shadow datasets from the auxiliary split, "
        f"scored on 200 datasets from the testing split, averaged over {reps} repetitions. "
        f"No defence: **{r['attack_none']:.3f}** (paper: {PAPER_NO_DEFENCE}).",
        "",
        "*Paper's protocol*: as the authors' published notebook does, the classifier is trained on shadow "
        "statistics without noise and only the test releases are noisy. *Informed attacker*: the attacker "
        "knows the mechanism and trains on noisy shadow releases (dashed lines in the figure) — the stronger "
        "attack, and the one a privacy claim must survive. The paper's Table 3 understates it at larger ε. "
        "(GroupDP(G) is attacked with the paper's protocol only: its noise swamps F either way.)",
        "",
        markdown_table(attacks.set_index(["mechanism", "ε"]), floatfmt="{:.3f}"),
        "",
        "![attack accuracy](figure4_attack_accuracy.png)",
        "",
        "## Run time",
        "",
        f"Whole study: **{r['elapsed']:.1f} s** on this machine ({os.cpu_count()} cores).",
        "",
        *[f"* {k}: {v:.1f} s" for k, v in timings.items()],
        "",
    ]
    path.write_text("\n".join(lines))


def user_section(table: pd.DataFrame, paper_best: float = PAPER_TABLE2["DauM(G)"][1]) -> list[str]:
    """The report's section on what a user gets with default arguments (the table of :func:`user_table`)."""
    shown = table.copy()
    for col in ("accounted δ", "δ estimate"):
        shown[col] = [f"{v:.3g}" if np.isfinite(v) else "–" for v in shown[col]]
    best = best_established(table)
    twins = table[table["mechanism"].str.endswith("(half noise)")]["accounted δ"]
    caught = f"{int((twins > DELTA).sum())} of {len(twins)} caught by the accountant"
    return [
        "",
        "## What a user gets: default arguments, accounted on the released law",
        "",
        "Each Gaussian-family mechanism with its default arguments (`accountant=\"auto\"`): the noise shape of its "
        "theorem, scaled to the least factor whose accounted δ(ε) of the *released law* — the mixture of the "
        "query's draws plus the noise, no Gaussian or equal-covariance premise — meets the request, from "
        f"{', '.join(f'{n:,}' for n in sorted(set(table['draws']), reverse=True))} draws per secret. *accounted δ*: "
        "the accountant's upper confidence bound (95 %), *δ estimate* its point estimate. The likelihood-ratio "
        "attack (`bayespriv.audit.likelihood_ratio_attack`, 2 000 fresh datasets per secret, densities from 2 000 "
        "held-out draws) guesses the secret from one released value; *accuracy bound* is the most any test may "
        "reach if the claim holds, *n_leaked* the records seen directly that give the same accuracy. A *half noise* "
        "row is a deliberately broken twin (half the variance): its accounted δ exceeds the request.",
        "",
        markdown_table(shown.set_index(["draws", "ε", "mechanism"]), floatfmt="{:.3f}"),
        "",
        f"* Best established Gaussian-family mechanism at ε = 1 ({best['draws']:,} draws): **{best['mechanism']}, "
        f"L2 error {best['L2 error']:.2f}**, {best['L2 error'] / paper_best:.3f} × the paper's best ({paper_best:.2f}, "
        "DauM(G), whose guarantee is not established: classic constant at ε = 1 and an equal-covariance premise "
        "that fails on these data).",
        f"* Half-noise twins: accounted δ {twins.min():.3g}–{twins.max():.3g} against the requested {DELTA:g}: "
        f"{caught}. The attack is far from its accuracy bound either way: a δ of "
        "1e-2 is a rare-event leak that one released value seldom shows.",
        "",
    ]


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adult-dir", type=Path, default=Path(os.environ.get("BAYESPRIV_ADULT_DIR", DEFAULT_ADULT_DIR)))
    parser.add_argument("--out", type=Path, default=Path("census-study"))
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--repetitions", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="coarser grids and fewer attack repetitions")
    args = parser.parse_args(list(argv) if argv is not None else None)
    run(args.adult_dir, args.out, draws=args.draws, repetitions=args.repetitions, seed=args.seed, quick=args.quick)


if __name__ == "__main__":
    main()
