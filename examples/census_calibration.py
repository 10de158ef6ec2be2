"""Calibrate the census release of the distribution-privacy paper and compare mechanisms.

Task (Chen & Ohrimenko, AISTATS 2023, §5.1): release five statistics of 100 census
records (mean age, mean years of education, number never married, number female,
mean hours per week) while hiding whether 45 % or 55 % of them earn more than $50K.

    .venv/bin/python examples/census_calibration.py [--adult-dir DIR] [--draws 1000]

Needs the UCI Adult data (never committed; default ../shared/data/adult).
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bayespriv as bp
from bayespriv.models.census import DEFAULT_ADULT_DIR, census_model, census_query, income_pairs, load_adult


def expected_l2(mech: bp.mechanisms.Mechanism, rng: np.random.Generator, n: int = 20000) -> float:
    """E‖noise‖₂ of a mechanism, by Monte Carlo over its noise (no data involved)."""
    zero = np.zeros(mech.k)
    return float(np.mean([np.linalg.norm(mech.release_value(zero, rng=rng).value) for _ in range(n // 20)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adult-dir", type=Path, default=Path(os.environ.get("BAYESPRIV_ADULT_DIR", DEFAULT_ADULT_DIR)))
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args()

    table = load_adult(args.adult_dir)
    model = census_model(table, n_records=100)
    query, pairs = census_query(), income_pairs(delta_p=0.1)

    cal = bp.calibrate(model, pairs, query, n_draws=args.draws, rng=0)  # 95% conservative bounds
    print(cal)
    print(cal.moments_table().round(3), "\n")

    # Exact moments are available for this model and additive query: no Monte-Carlo error at all.
    exact = bp.Calibration.from_moments(
        {s: model.moments(s, query)[0] for s in pairs.secrets},
        {s: model.moments(s, query)[1] for s in pairs.secrets},
        pairs, query, n_records=model.n_records,
    )

    rng = np.random.default_rng(1)
    rows = []
    for label, c in (("sampled, 95% bounds", cal), ("exact moments", exact)):
        for name, mech in (
            ("ExpM(G)", bp.mechanisms.ExpM(c, epsilon=1.0, delta=1e-3)),
            ("ExpM(L)", bp.mechanisms.ExpM(c, epsilon=1.0, noise="laplace")),
            ("APGM", bp.mechanisms.APGM(c, epsilon=1.0, delta=1e-3)),
            ("GroupDP(G)", bp.mechanisms.GroupDP(c, epsilon=1.0, delta=1e-3)),
        ):
            rows.append({"calibration": label, "mechanism": name, "E‖noise‖₂": expected_l2(mech, rng),
                         "guarantee": str(mech.guarantee)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bp.PrivacyAssumptionWarning)  # classic at ε = 1: the paper's setting
        paper = bp.mechanisms.ExpM(cal, epsilon=1.0, delta=1e-3, gaussian_calibration="classic")
    rows.append({"calibration": "sampled, 95% bounds", "mechanism": "ExpM(G) classic (paper)",
                 "E‖noise‖₂": expected_l2(paper, rng), "guarantee": str(paper.guarantee)})
    with pd.option_context("display.max_colwidth", 120, "display.width", 200):
        print(pd.DataFrame(rows).set_index(["calibration", "mechanism"]).round(2))

    sample = table.sample(100, random_state=2)
    release = bp.mechanisms.ExpM(exact, epsilon=1.0, delta=1e-3).release(sample)
    print("\none release (ExpM(G), analytic, exact moments):")
    print(release.to_series().round(2))


if __name__ == "__main__":
    main()
