"""The accountant of the released law (``accountant="auto"``, the default), measured on the library's scenarios.

    .venv/bin/python benchmarks/bench_accountant.py [--adult-dir DIR] [--out benchmarks/RESULTS_accountant.md]

Every figure comes from one run of this script, at (ε, δ) = (1, 1e-3):

1. Census (UCI Adult, five statistics of 100 records, income 0.45 vs 0.55), 20 000 draws per secret: for each
   Gaussian-family mechanism, the time of the accounting and scale search alone and of the whole construction
   (median of three) beside the calibration's own time, whether the guarantee is established, the accounted δ
   and its method, the L2 error; and ``accountant="gaussian"`` beside the analytic Gaussian computed by hand.
2. The same mechanisms at 1 000 draws (which cannot certify δ = 1e-3: the refusal and the draws it asks for)
   and at 40 000 (the noise trace ratio 40 000 / 20 000).
3. An independent check of APGM's accounted δ at 20 000 draws: plain Monte Carlo of the privacy loss of the
   same sampled 5-D law (the empirical mixtures of the calibration's draws, plus the noise) over 10⁶ points per
   direction; and the half-noise twin (the accountant's δ with half the noise variance).
4. Eight schools (PyMC, secret mu = 0 vs 5, mean of 80 new scores, 2 000 and 20 000 draws) and a record-level
   pgmpy network (share 0.2 vs 0.5 of a state over 200 records, count of another): APGM's noise variance with
   default arguments against the Gaussian route's, and against the figures this file recorded at 73a0ed3
   (before the accountant covered what the draws cannot show).
5. The hospital (average blood pressure, all 144 pairs of shares of women): 1 000 vs 20 000 draws.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np

import bayespriv as bp
import bayespriv.mechanisms.scale_search as accounted_module
from bayespriv.calibration import ExecutionOptions
from bayespriv.calibration.laws import conditions_of
from bayespriv.privacy.accountant import GaussianNoise, account

ROOT = Path(__file__).resolve().parents[1]
M = bp.mechanisms
EPS, DELTA = 1.0, 1e-3
FAMILY = {
    "APGM": lambda c, **kw: M.APGM(c, **kw),
    "EigM": lambda c, **kw: M.EigM(c, **kw),
    "DauM": lambda c, **kw: M.DauM(c, **kw),
    "OptimalGaussian": lambda c, **kw: M.OptimalGaussian(c, **kw),
    "ExpM(G)": lambda c, **kw: M.ExpM(c, **kw),
    "DirM(G)": lambda c, **kw: M.DirM(c, noise="gaussian", **kw),
}


class AccountingTimer:
    """Times the calls of the accountant's shape scaling made while a mechanism is built."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._orig = {}

    def __enter__(self) -> "AccountingTimer":
        for name in ("account_gaussian_shape", "account_laplace_shape"):
            orig = getattr(accounted_module, name)
            self._orig[name] = orig

            def timed(*args, _orig=orig, **kwargs):
                t = time.perf_counter()
                try:
                    return _orig(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - t

            setattr(accounted_module, name, timed)
        return self

    def __exit__(self, *exc) -> None:
        for name, orig in self._orig.items():
            setattr(accounted_module, name, orig)


def build(name: str, cal: bp.Calibration, **kw) -> tuple[M.Mechanism, float, float]:
    """The mechanism, the seconds of its accounting and of its whole construction."""
    with AccountingTimer() as timer:
        t = time.perf_counter()
        mech = FAMILY[name](cal, epsilon=EPS, delta=DELTA, **kw)
        total = time.perf_counter() - t
    return mech, timer.seconds, total


def l2_error(mech: M.Mechanism, rng: np.random.Generator, n: int = 20_000) -> float:
    from bayespriv.audit import noise_sampler

    return float(np.linalg.norm(noise_sampler(mech, mech.k)(n, rng), axis=1).mean())


def trace(mech: M.Mechanism) -> float:
    return float(np.trace(mech.noise_cov))


def refused_at(name: str, cal: bp.Calibration) -> str:
    """'refused: asks N' when the mechanism refuses the calibration for want of draws, else 'established'."""
    try:
        FAMILY[name](cal, epsilon=EPS, delta=DELTA)
    except bp.DrawsNeededError as exc:
        return f"refused, asks {exc.draws_needed:,}"
    return "established"


def census_timings(cals: dict[int, bp.Calibration], calibration_s: float, repeats: int = 3) -> tuple[list[str], dict]:
    rng = np.random.default_rng(0)
    out = ["## 1–2. Census: accounting time beside the calibration's, and 1 000 / 20 000 / 40 000 draws", "",
           f"The calibration itself (20 000 draws per secret, median of {repeats}): {calibration_s:.3f} s.", "",
           "| mechanism | accounting s (median of 3) | accounting / calibration | construction s | established | "
           "accounted δ (method) | L2 error | at 1 000 draws | trace ratio 40 000 / 20 000 draws |",
           "|---|---|---|---|---|---|---|---|---|"]
    mechs, total = {}, 0.0
    for name in FAMILY:
        runs = [build(name, cals[20_000]) for _ in range(repeats)]
        mech = runs[-1][0]
        acc_s, tot_s = np.median([r[1] for r in runs]), np.median([r[2] for r in runs])
        total += acc_s
        more = FAMILY[name](cals[40_000], epsilon=EPS, delta=DELTA)
        a = mech.accounting.account
        out.append(f"| {name} | {acc_s:.2f} | {acc_s / calibration_s:.0f}× | {tot_s:.2f} | {mech.guarantee.established} "
                   f"| {a.delta:.3g} ({a.method}) | {l2_error(mech, rng):.2f} | {refused_at(name, cals[1000])} "
                   f"| {trace(more) / trace(mech):.3f} |")
        print(f"  {name}: accounting {acc_s:.2f} s, construction {tot_s:.2f} s", flush=True)
        mechs[name] = mech
    out += ["", f"All six: accounting {total:.2f} s, **{total / calibration_s:.0f}×** the calibration's time.", ""]
    return out + _one_evaluation(cals[20_000], mechs["APGM"], calibration_s), mechs


def _one_evaluation(cal: bp.Calibration, mech: M.Mechanism, calibration_s: float, repeats: int = 5) -> list[str]:
    """What one evaluation of the accounted δ costs (every condition and direction at one noise): the floor
    under which no scale search can go, beside the calibration."""
    conds = conditions_of(cal)
    noise = GaussianNoise(mech.noise_cov)
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        account(conds, noise, EPS, confidence=cal.confidence, target=DELTA, diagnostics=False)
        runs.append(time.perf_counter() - t)
    one = float(np.median(runs))
    return [f"One evaluation of the accounted δ at APGM's noise (both directions, importance sampling over the two "
            f"empirical mixtures of 20 000 five-dimensional atoms; median of {repeats}): {one:.3f} s = "
            f"{one / calibration_s:.1f}× the calibration. A scale search needs a few evaluations per mechanism "
            "(its bracket, then the final check with the split-half diagnostics), so six mechanisms cannot "
            f"account within 5× the calibration with this estimator: that would leave {5 * calibration_s / 6:.3f} s "
            "per mechanism.", ""]


def gaussian_route(cal: bp.Calibration, repeats: int = 5) -> list[str]:
    """``accountant="gaussian"`` (APGM) beside the analytic Gaussian computed by hand from the calibration's bounds."""
    from bayespriv.privacy import gaussian_sigma

    draws = np.asarray(cal.sample_array)

    def by_hand() -> float:  # what a user writes: the means of the draws, their distance, the analytic σ
        means = draws.mean(axis=1)
        return float(gaussian_sigma(float(np.linalg.norm(means[0] - means[1])), EPS, DELTA)) ** 2

    def route() -> M.Mechanism:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return M.APGM(cal, epsilon=EPS, delta=DELTA, accountant="gaussian")

    times = {}
    for label, fn in (("hand", by_hand), ("route", route)):
        runs = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t)
        times[label] = float(np.median(runs))
    runs = []
    for _ in range(repeats):  # the construction's floor: the equal-covariance closed form, no search
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            M.APGM(cal, epsilon=EPS, delta=DELTA, accountant="gaussian", covariance="equal")
        runs.append(time.perf_counter() - t)
    times["equal"] = float(np.median(runs))
    mech = route()
    ratio = times["route"] / times["hand"]
    return ["### The Gaussian route at 20 000 draws", "",
            f"Median of {repeats}: analytic Gaussian by hand (the draws' means, their distance, σ = Δ/r*) "
            f"{times['hand'] * 1e3:.2f} ms; "
            f"`APGM(accountant='gaussian')` {times['route'] * 1e3:.1f} ms "
            f"(**{ratio:.1f}×**; covariance mode {mech.covariance_mode!r}). The same mechanism with "
            f"`covariance='equal'` (a closed form, no search: what building a mechanism costs at the least) "
            f"{times['equal'] * 1e3:.2f} ms ({times['equal'] / times['hand']:.1f}×); the unequal covariances of the "
            "two incomes make the rest: a bracketing search of the noise scale over the calibration's confidence box "
            "of means and covariances, with the exact δ of two Gaussians of unequal covariances wherever the "
            "closed-form screen is not enough.", ""]


def _log_mixture(y: np.ndarray, atoms: np.ndarray, chunk_elems: float = 2e7) -> np.ndarray:
    """log of the mean over atoms x of exp(-|y - x|²/2), up to the constant common to both laws."""
    out = np.empty(len(y))
    xx = -0.5 * np.einsum("ij,ij->i", atoms, atoms)
    step = max(1, int(chunk_elems // len(atoms)))
    for s in range(0, len(y), step):
        g = y[s:s + step] @ atoms.T
        g += xx
        top = g.max(axis=1, keepdims=True)
        np.exp(g - top, out=g)
        out[s:s + step] = (np.log(g.sum(axis=1)) + top[:, 0] - 0.5 * np.einsum("ij,ij->i", y[s:s + step], y[s:s + step])
                           - np.log(len(atoms)))
    return out


def independent_delta(cal: bp.Calibration, noise_cov: np.ndarray, n_points: int, rng: np.random.Generator,
                      screen_atoms: int = 2000, margin: float = 0.3) -> dict[str, tuple[float, float, float]]:
    """H_ε(P‖Q) in both directions for the released law of the calibration's draws, by plain Monte Carlo.

    Points y ~ P (an atom of P plus noise, whitened by the noise); the loss L(y) = log p(y) − log q(y) is first
    screened on ``screen_atoms`` atoms of each law, and computed on all atoms where the screen is within
    ``margin`` of ε (5 000 screened-out points are checked on all atoms too: their largest L is reported).
    Returns direction -> (estimate, standard error, largest checked L among screened-out points)."""
    cond = conditions_of(cal)[0]
    whiten = np.linalg.inv(np.linalg.cholesky(noise_cov))
    xa, xb = cond.law_a.draws, cond.law_b.draws
    ctr = (xa.mean(0) + xb.mean(0)) / 2
    A, B = (xa - ctr) @ whiten.T, (xb - ctr) @ whiten.T
    out = {}
    for name, P, Q in (("a‖b", A, B), ("b‖a", B, A)):
        y = P[rng.integers(len(P), size=n_points)] + rng.standard_normal((n_points, P.shape[1]))
        sub_p, sub_q = (X[rng.choice(len(X), min(screen_atoms, len(X)), replace=False)] for X in (P, Q))
        screen = _log_mixture(y, sub_p) - _log_mixture(y, sub_q)
        keep = screen > EPS - margin
        check = rng.choice(np.flatnonzero(~keep), 5000, replace=False)
        checked = _log_mixture(y[check], P) - _log_mixture(y[check], Q)
        loss = _log_mixture(y[keep], P) - _log_mixture(y[keep], Q)
        terms = np.zeros(n_points)
        terms[keep] = np.clip(1.0 - np.exp(EPS - loss), 0.0, None)
        out[name] = (float(terms.mean()), float(terms.std(ddof=1) / np.sqrt(n_points)), float(checked.max()))
        print(f"  independent {name}: {out[name][0]:.4g} ± {out[name][1]:.2g}", flush=True)
    return out


def independent_section(mech: M.Mechanism, n_points: int) -> list[str]:
    t = time.perf_counter()
    ind = independent_delta(mech.calibration, mech.noise_cov, n_points, np.random.default_rng(2024))
    took = time.perf_counter() - t
    rows = {r.direction: r for r in mech.accounting.account.rows}
    cal = mech.calibration
    half = account(conditions_of(cal), GaussianNoise(mech.noise_cov / 2), EPS, confidence=cal.confidence)
    out = ["## 3. Independent check of the accounted δ (census, APGM, 20 000 draws)", "",
           f"Plain Monte Carlo, {n_points:,} points per direction, of the privacy loss of the same sampled law "
           f"(empirical mixtures of the calibration's draws, plus APGM's noise) — {took:.0f} s.", "",
           "| direction | accountant: estimate | accountant: upper bound | Monte Carlo | MC standard error | "
           "largest L of 5 000 screened-out points |", "|---|---|---|---|---|---|"]
    for d, (h, se, lmax) in ind.items():
        out.append(f"| {d} | {rows[d].value:.4g} | {rows[d].upper:.4g} | {h:.4g} | {se:.2g} | {lmax:.3f} (ε = {EPS:g}) |")
    out += ["", f"Half-noise twin (half APGM's variance): accounted δ = **{half.delta:.3g}** "
            f"({'caught: above' if half.delta > DELTA else 'NOT caught: below'} the target {DELTA:g}).", ""]
    return out


def record_net():
    """A → S, A → D (pgmpy): the count of D = yes depends on the share of S = mid through A only."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    net = DiscreteBayesianNetwork([("A", "S"), ("A", "D")])
    states = {"A": ["a0", "a1", "a2"], "S": ["lo", "mid", "hi"], "D": ["no", "yes"]}
    net.add_cpds(
        TabularCPD("A", 3, [[0.5], [0.3], [0.2]], state_names={"A": states["A"]}),
        TabularCPD("S", 3, [[0.8, 0.2, 0.1], [0.15, 0.6, 0.2], [0.05, 0.2, 0.7]], evidence=["A"], evidence_card=[3],
                   state_names={"S": states["S"], "A": states["A"]}),
        TabularCPD("D", 2, [[0.8, 0.5, 0.2], [0.2, 0.5, 0.8]], evidence=["A"], evidence_card=[3],
                   state_names={"D": states["D"], "A": states["A"]}),
    )
    return net


#: APGM noise variances this benchmark recorded at 73a0ed3 (RESULTS_accountant.md of that commit, the same seeds).
PREVIOUS = {("schools", 2000): 133.6, ("schools", 20_000): 133.6,  # (then recorded at 2 000 draws only)
            ("network", 2000): 151.3, ("network", 20_000): 113.7, ("network", "exact"): 97.32}


def _route_row(label: str, cal: bp.Calibration, previous: float | None = None) -> str:
    t = time.perf_counter()
    try:
        auto = M.APGM(cal, epsilon=EPS, delta=DELTA)
    except bp.DrawsNeededError as exc:
        return (f"| {label} | refused: asks {exc.draws_needed:,} draws | – | – | – | – | – | "
                f"{previous if previous is not None else '–'} | – | {time.perf_counter() - t:.2f} |")
    took = time.perf_counter() - t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        route = M.APGM(cal, epsilon=EPS, delta=DELTA, accountant="gaussian")
    va, vg = float(auto.noise_cov[0, 0]), float(route.noise_cov[0, 0])
    failed = ", ".join(route.guarantee.failed_assumptions) or "–"
    ratio = f"{va / vg:.3f}" if vg > 0 else "– (route: no noise)"
    before = f"{previous:.4g} ({va / previous:.3f}×)" if previous is not None else "–"
    return (f"| {label} | {auto.guarantee.established} | {auto.accounting.account.delta:.3g} "
            f"({auto.accounting.account.method}) | {va:.4g} | {vg:.4g} | {route.guarantee.established} "
            f"(failed: {failed}) | {before} | {ratio} | {took:.2f} |")


def other_models() -> list[str]:
    from bayespriv.models.schools import schools_model, schools_query

    out = ["## 4. Eight schools and a record-level pgmpy network: APGM with default arguments", "",
           "| scenario | established | accounted δ (method) | noise variance (auto) | noise variance (gaussian route) "
           "| gaussian route established | at 73a0ed3 (now / then) | ratio auto / route | accounting s |",
           "|---|---|---|---|---|---|---|---|---|"]
    pair = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 5.0))
    for n in (2000, 20_000):
        t = time.perf_counter()
        cal = bp.calibrate(schools_model(), pair, schools_query(), n_draws=n, rng=5,
                           execution=ExecutionOptions(progress=False))
        print(f"  eight schools calibrated in {time.perf_counter() - t:.1f} s", flush=True)
        out.append(_route_row(f"eight schools, mu 0 vs 5, {n:,} draws (MCMC)", cal, PREVIOUS.get(("schools", n))))
    net = bp.BayesNetDataModel(record_net(), n_records=200)
    share = bp.SecretPair(bp.DatasetSecret.proportion("S", "mid", 0.2), bp.DatasetSecret.proportion("S", "mid", 0.5))
    for n in (2000, 20_000):
        cal = bp.calibrate(net, share, bp.count("D", "yes"), n_draws=n, rng=5, exact_laws=False)
        out.append(_route_row(f"pgmpy network, share 0.2 vs 0.5, {n:,} draws", cal, PREVIOUS.get(("network", n))))
    cal = bp.calibrate(net, share, bp.count("D", "yes"), n_draws=2000, rng=5)
    out.append(_route_row("pgmpy network, share 0.2 vs 0.5, exact finite law (default)", cal,
                          PREVIOUS.get(("network", "exact"))))
    return out + [""]


def hospital() -> list[str]:
    import bayespriv.models.hospital as H

    out = ["## 5. Hospital: average blood pressure, all 144 pairs of shares of women", "",
           "| draws per secret | calibration s | APGM construction s | established | accounted δ (method) | "
           "noise variance |", "|---|---|---|---|---|---|"]
    for n in (1000, 20_000):
        t = time.perf_counter()
        cal = bp.calibrate(H.hospital_model(), H.secret_pairs(), H.QUERIES["average blood pressure"], n_draws=n, rng=5)
        t_cal = time.perf_counter() - t
        try:
            mech, _, total = build("APGM", cal)
        except bp.DrawsNeededError as exc:
            out.append(f"| {n:,} | {t_cal:.1f} | – | refused: asks {exc.draws_needed:,} draws | – | – |")
            continue
        a = mech.accounting.account
        out.append(f"| {n:,} | {t_cal:.1f} | {total:.1f} | {mech.guarantee.established} | {a.delta:.3g} ({a.method}) "
                   f"| {float(mech.noise_cov[0, 0]):.4g} |")
        print(f"  hospital {n}: {total:.1f} s", flush=True)
    return out + [""]


def main(argv=None) -> None:
    from bayespriv.models.census import DEFAULT_ADULT_DIR, census_model, census_query, income_pairs, load_adult

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adult-dir", type=Path, default=Path(os.environ.get("BAYESPRIV_ADULT_DIR", DEFAULT_ADULT_DIR)))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "RESULTS_accountant.md")
    parser.add_argument("--points", type=int, default=1_000_000, help="Monte-Carlo points of the independent check")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    model = census_model(load_adult(args.adult_dir))
    pair, query = income_pairs(0.1), census_query()
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        cal20 = bp.calibrate(model, pair, query, n_draws=20_000, rng=71)
        runs.append(time.perf_counter() - t)
    cals = {20_000: cal20, 1000: bp.calibrate(model, pair, query, n_draws=1000, rng=72),
            40_000: bp.calibrate(model, pair, query, n_draws=40_000, rng=73)}
    print("census", flush=True)
    lines, mechs = census_timings(cals, float(np.median(runs)))
    lines += gaussian_route(cal20)
    print("independent check", flush=True)
    lines += independent_section(mechs["APGM"], args.points)
    print("eight schools and pgmpy", flush=True)
    lines += other_models()
    print("hospital", flush=True)
    lines += hospital()
    head = ["# The accountant of the released law, measured", "",
            f"`benchmarks/bench_accountant.py`, one run, (ε, δ) = ({EPS:g}, {DELTA:g}), default arguments "
            f"(`accountant=\"auto\"`); {os.cpu_count()} cores shared with other jobs (timings are noisy). "
            f"Whole run: {time.perf_counter() - start:.0f} s.", ""]
    args.out.write_text("\n".join(head + lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
