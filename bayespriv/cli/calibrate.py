"""``bayespriv calibrate``: run a calibration script and save the calibration."""

from __future__ import annotations

import argparse
import time

import numpy as np

import bayespriv as bp
from bayespriv.cli.files import _check_out_file, _write_atomically
from bayespriv.cli.problems import _ArgumentProblem
from bayespriv.cli.script import _run_script, _script_name, _script_query
from bayespriv.errors import BayesPrivError

#: Datasets per secret when neither --draws nor the script says: enough to certify δ = 1e-3 for a few pairs
#: (bayespriv.mechanisms.draws_for_delta gives 15 512 for one pair, 20 000 for three).
DEFAULT_DRAWS = 20_000


def _calibrate_cmd(args: argparse.Namespace) -> int:
    from bayespriv.datamodels.base import DataModel

    _check_out_file(args.out, "--out")  # before the script and the calibration run
    scope = _run_script(args.script, "SCRIPT.py")
    model = _script_name(scope, "model", (DataModel, bp.DataModelFamily), "a bayespriv DataModel or DataModelFamily",
                         args.script, "SCRIPT.py")
    query = _script_query(scope, args.script, "SCRIPT.py")
    pairs = _script_name(scope, "pairs", (bp.SecretPair, list, tuple), "a SecretPair or a sequence of them",
                         args.script, "SCRIPT.py")
    n_draws = args.draws if args.draws is not None else scope.get("n_draws", DEFAULT_DRAWS)
    confidence = {None: scope.get("confidence", 0.95), "none": None}.get(args.confidence, args.confidence)
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy)
    t0 = time.perf_counter()
    try:
        cal = bp.calibrate(model, pairs, query, n_draws=n_draws, rng=seed, confidence=confidence)
    except BayesPrivError as exc:
        raise _ArgumentProblem("SCRIPT.py", f"calibrate refused the script's inputs (n_draws is --draws): {exc}",
                               "fix the script's model, pairs or query, or pass more --draws") from exc
    _write_atomically(args.out, lambda tmp: cal.to_netcdf(tmp, seed=seed), "--out")
    print(f"calibrated {query.name!r}: {len(cal.secrets)} secrets × {cal.n_draws} draws"
          f"{f' × {len(cal.family)} models' if cal.is_family else ''} in {time.perf_counter() - t0:.2f} s, seed {seed}")
    print(repr(cal))
    print(f"saved: {args.out}")
    return 0
