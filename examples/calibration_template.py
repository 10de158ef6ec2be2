"""Template of a calibration script for the ``bayespriv`` command: calibrate once, release later.

Copy this file and edit the names below. Then, from a shell where the environment that has
bayespriv is active (in this repository, after ``make demo``: ``source .venv/bin/activate``)::

    bayespriv calibrate calibration_template.py --out cal.nc --seed 1
    bayespriv inspect cal.nc --out figures/
    bayespriv release cal.nc --script calibration_template.py --mechanism APGM \\
        --epsilon 1 --delta 1e-3 --data payroll.csv --ledger budget.sqlite --budget salary=3,1e-2
    bayespriv ledger budget.sqlite

``calibrate`` runs this script, calibrates ``query`` on ``model`` for ``pairs`` and saves
the result (netCDF). ``release`` runs the script again for its ``query`` — a query is
code, so the file stores only its fingerprint, and a release with a changed query is
refused — builds the mechanism and releases on the CSV file (header row, the query's
columns, exactly ``N_RECORDS`` rows), spending the budget of the protected attribute
(here ``salary``) in the ledger first.

The script must define, at module level:

``model``
    Θ, the adversary's data model: a bayespriv ``DataModel`` or ``DataModelFamily``.
``pairs``
    A ``SecretPair`` or a sequence of them: what the release must not tell apart.
``query``
    A bayespriv ``Query``: the statistic released.

and may define ``n_draws`` (datasets per secret; ``--draws`` overrides it) and
``confidence`` (level of the calibration's bounds; ``None`` for a plug-in calibration).
It runs with ``__name__ == "bayespriv_script"``: code under
``if __name__ == "__main__":`` runs only when you run the file yourself.

The scenario: a payroll of 40 employees whose salary (k$), years of service and
performance score are jointly Gaussian with known parameters. The company publishes
the average years of service and the average score, and must hide whether the average
salary is 55 or 65 (k$).
"""

import bayespriv as bp

#: Rows of the dataset the release will be made on.
N_RECORDS = 40

model = bp.GaussianDataModel(
    [60.0, 8.0, 3.0],  # means: salary, years, score
    [[100.0, 12.0, 2.0],
     [12.0, 16.0, 0.5],
     [2.0, 0.5, 1.0]],
    ["salary", "years", "score"],
    N_RECORDS,
)

pairs = bp.SecretPair(bp.DatasetSecret.mean("salary", 55.0), bp.DatasetSecret.mean("salary", 65.0))

query = bp.stack(bp.mean("years"), bp.mean("score"))

n_draws = 20_000
confidence = 0.95


if __name__ == "__main__":
    # Running the file itself writes a synthetic payroll to release on (not used by `calibrate`).
    import sys

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    data = rng.multivariate_normal([60.0, 8.0, 3.0], [[100.0, 12.0, 2.0], [12.0, 16.0, 0.5], [2.0, 0.5, 1.0]],
                                   size=N_RECORDS)
    out = sys.argv[1] if len(sys.argv) > 1 else "payroll.csv"
    pd.DataFrame(data, columns=["salary", "years", "score"]).to_csv(out, index=False)
    print(f"wrote {out}")
