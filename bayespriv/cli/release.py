"""``bayespriv release``: build a mechanism on a saved calibration, open the ledger, release on a CSV file."""

from __future__ import annotations

import argparse
import inspect
import shlex
import sys
from typing import TYPE_CHECKING, Any

import bayespriv as bp
from bayespriv.cli.calibration_files import _load_trusting, _unverified_opt_in
from bayespriv.cli.files import _read_data
from bayespriv.cli.output import _release_json, _release_text
from bayespriv.cli.problems import _ArgumentProblem
from bayespriv.cli.script import _run_script, _script_query
from bayespriv.errors import BayesPrivError

if TYPE_CHECKING:
    import pandas as pd
    from bayespriv.calibration import CalibrationLike
    from bayespriv.ledger import Ledger
    from bayespriv.mechanisms import Mechanism


#: Mechanisms the command line builds as ``NAME(calibration, epsilon=E[, delta=D])``.
_NOT_FROM_CALIBRATION = frozenset({"WithExtraLaplace", "APMQM"})


def _cli_mechanisms() -> dict[str, type]:
    from bayespriv import mechanisms as M

    out = {}
    for name in M.__all__:
        obj = getattr(M, name)
        if isinstance(obj, type) and issubclass(obj, M.Mechanism) and obj is not M.Mechanism \
                and name not in _NOT_FROM_CALIBRATION:
            out[name] = obj
    return out


def _best_mechanism(cal: bp.Calibration, args: argparse.Namespace) -> Any:
    """``--mechanism best``: every candidate of :func:`bayespriv.mechanisms.choose` at (ε, δ), the established one
    with the least expected squared error; the comparison goes to stderr once the release is made."""
    if args.delta is None or args.accountant != "auto":
        raise _ArgumentProblem("--mechanism", "best compares the Gaussian and expected-value mechanisms at one (ε, δ) "
                               "with their default accountant", "pass --delta, and no --accountant")
    try:
        choice = bp.mechanisms.choose(cal, epsilon=args.epsilon, delta=args.delta)
    except BayesPrivError as exc:
        raise _ArgumentProblem("--mechanism/--epsilon/--delta", f"no mechanism is established on this calibration: {exc}",
                               "calibrate with more draws, or ask a larger --epsilon/--delta") from exc
    # printed once the release is made (a refusal stays the command's one line)
    args.choice_note = (f"bayespriv: --mechanism best chose {type(choice.best).__name__}:\n"
                        f"{choice.table[['established', 'E‖noise‖²', '× best']].to_string()}")
    return choice.best


def _build_mechanism(cal: bp.Calibration, args: argparse.Namespace) -> Any:
    if args.mechanism == "best":
        return _best_mechanism(cal, args)
    known = _cli_mechanisms()
    cls = known.get(args.mechanism)
    if cls is None:
        raise _ArgumentProblem("--mechanism", f"there is no mechanism {args.mechanism!r}",
                               f"pass one of {', '.join(known)}")
    kwargs = {"epsilon": args.epsilon} if args.delta is None else {"epsilon": args.epsilon, "delta": args.delta}
    if args.accountant != "auto":
        if "accountant" not in inspect.signature(cls.__init__).parameters:
            raise _ArgumentProblem("--accountant", f"{args.mechanism} rests on its own theorem and takes no accountant",
                                   "drop --accountant, or choose an additive-noise mechanism (APGM, EigM, DauM, ...)")
        kwargs["accountant"] = args.accountant
    try:
        return cls(cal, **kwargs)
    except (BayesPrivError, TypeError) as exc:
        raise _ArgumentProblem("--mechanism/--epsilon/--delta",
                               f"{args.mechanism} cannot be built on this calibration with {kwargs}: {exc}",
                               "choose another mechanism, ε or δ (see `bayespriv release --help`)") from exc


def _open_ledger(args: argparse.Namespace, mech: Mechanism) -> Any:
    """The ledger of ``--ledger`` (created if missing) with the budgets of ``--budget`` created.

    ``--budget`` creates a budget that does not exist yet and does nothing when it already has that
    value; it never changes one (a command run again with another number must not lift a spent
    budget): that is refused here, before anything is released or spent. Changing a budget is
    ``bayespriv ledger set-budget``.
    """
    if args.ledger is None:
        if args.budget:
            raise _ArgumentProblem("--budget", "--budget was given without --ledger",
                                   "add --ledger BUDGET.sqlite (the file that keeps the budgets)")
        return None
    try:
        ledger = bp.Ledger(args.ledger)
    except BayesPrivError as exc:
        raise _ArgumentProblem("--ledger", str(exc), "fix or restore the ledger file, or pass another path; "
                                                     "nothing was released") from exc
    where = shlex.quote(str(args.ledger))
    given: dict[str, tuple[float, float]] = {}
    for name, eps, delta, text in args.budget:
        if given.setdefault(name, (eps, delta)) != (eps, delta):
            raise _ArgumentProblem("--budget", f"budget {name!r} is given twice with different values",
                                   "give each budget once")
    for name, eps, delta, text in args.budget:
        try:
            created = ledger.create_budget(name, eps, delta, reason="bayespriv release --budget")
        except BayesPrivError as exc:
            current = getattr(exc, "current", None)
            if current is None:
                raise _ArgumentProblem("--budget", f"{name}={text}: {exc}", "pass NAME=EPS[,DELTA] with a budget the "
                                                                          "ledger can hold") from exc
            raise _ArgumentProblem(
                "--budget", f"budget {name!r} in {str(args.ledger)!r} is ε={current[0]:g}, δ={current[1]:g}, and "
                            f"--budget {name}={text} would change it; nothing was released or spent",
                f"--budget only creates a budget; to change it on purpose run `bayespriv ledger set-budget {where} "
                f"{shlex.quote(name)} {shlex.quote(text)}`") from exc
        if created:
            print(f"bayespriv: created budget {name!r} in {str(args.ledger)!r}: ε={eps:g}, δ={delta or 0:g}",
                  file=sys.stderr)
    missing = [name for name in dict.fromkeys(getattr(mech, "protected", ()) or ()) if name not in ledger.budgets()]
    if missing:
        raise _ArgumentProblem("--budget", f"the ledger {str(args.ledger)!r} has no budget for {missing!r}, which "
                                           f"{args.mechanism} protects; nothing was released or spent",
                               f"create it with --budget {missing[0]}=EPS[,DELTA]")
    return ledger


def _release_cmd(args: argparse.Namespace) -> int:
    scope = _run_script(args.script, "--script")
    query = _script_query(scope, args.script, "--script")
    cal = _load_trusting(args.calibration, "CAL.nc", query, args.trust_unverified)
    _check_pairs(scope, cal, args)
    _check_model(scope, cal, args)
    data = _read_data(args.data)
    mech = _build_mechanism(cal, args)
    ledger = _open_ledger(args, mech)
    try:
        release = _release_on(mech, data, ledger, args)
    finally:
        if ledger is not None:
            ledger.close()
    if getattr(args, "choice_note", None):
        print(args.choice_note, file=sys.stderr)
    if args.output_format == "text":
        print(_release_text(release, args))
    else:
        print(_release_json(release, args, query, [p.label for p in getattr(cal, "pairs", ())]))
    return 0


def _check_pairs(scope: dict[str, Any], cal: CalibrationLike, args: argparse.Namespace) -> None:
    """The script's ``pairs`` must be the ones the file was calibrated for: the noise hides those pairs only
    (a file for 59.9 vs 60.1 released under a script of 55 vs 65 gave sd 0.50 where 3.17 was needed)."""
    if "pairs" not in scope or not hasattr(cal, "pairs"):
        return
    given = scope["pairs"]
    given = [given] if isinstance(given, bp.SecretPair) else list(given) if isinstance(given, (list, tuple)) else None
    if given is None or not all(isinstance(p, bp.SecretPair) for p in given):
        raise _ArgumentProblem("--script", f"'pairs' in {str(args.script)!r} must be a SecretPair or a sequence of "
                                           "them", "see examples/calibration_template.py")
    script, saved = sorted(p.label for p in given), sorted(p.label for p in cal.pairs)
    if script != saved:
        raise _ArgumentProblem(
            "--script", f"the script's pairs {script} must be the pairs {str(args.calibration)!r} was calibrated "
                        f"for, {saved}; nothing was released or spent",
            "release with the script the file was calibrated with, or calibrate again for these pairs")


def _saved_signature(cal: CalibrationLike, args: argparse.Namespace) -> Any:
    """The model signature the file records, from the verified tree (its provenance); the file's metadata when
    signing is switched off (nothing is verified then)."""
    import json

    provenance = getattr(cal, "provenance", None)
    if provenance is not None and provenance.model_signature is not None:
        return json.loads(provenance.model_signature)
    from bayespriv.files.calibration_io import read_metadata

    return read_metadata(args.calibration).get("model")


def _check_model(scope: dict[str, Any], cal: CalibrationLike, args: argparse.Namespace) -> None:
    """The script's ``model`` must be the one the file was calibrated with (class, records, columns, θ grid and a
    digest of its parameters, :mod:`bayespriv.datamodels.signature`): the noise hides the pairs under that model."""
    from bayespriv.datamodels.signature import model_signature, signature_differences

    if "model" not in scope or not hasattr(cal, "pairs"):
        return
    saved = _saved_signature(cal, args)
    if saved is None:
        print(f"bayespriv: {str(args.calibration)!r} records no model (written by an older version, or from a "
              "calibration built by hand): the script's model was not compared with it; calibrate again to bind it",
              file=sys.stderr)
        return
    try:
        given = model_signature(scope["model"])
    except (BayesPrivError, AttributeError, TypeError) as exc:
        raise _ArgumentProblem("--script", f"'model' in {str(args.script)!r} must be a bayespriv DataModel or "
                                           f"DataModelFamily: {exc}", "see examples/calibration_template.py") from exc
    differences, compared = signature_differences(saved, given)
    if differences:
        raise _ArgumentProblem(
            "--script", f"the script's model must be the one {str(args.calibration)!r} was calibrated with: "
                        f"{'; '.join(differences)}; nothing was released or spent",
            "release with the script the file was calibrated with, or calibrate again with this model")
    if not compared:
        print("bayespriv: the model's class, records, columns and θ grid match the file's; its parameters could not "
              "be written canonically (an object covered by its type only), so they were not compared",
              file=sys.stderr)


def _release_on(mech: Mechanism, data: pd.DataFrame, ledger: Ledger | None, args: argparse.Namespace) -> Any:
    """``mech.release`` on the data, each refusal turned into the command's one-line error."""
    from bayespriv.ledger.joint import JointAccountingError, JointLeakError
    from bayespriv.errors import AssumptionFailedError, BudgetExceededError, ReleaseMismatchError
    from bayespriv.privacy import ReleaseOptions

    try:
        options = ReleaseOptions(accept_failed_assumptions=args.accept_failed_assumptions,
                                 independent=args.independent, clip=args.clip, **_unverified_opt_in(args))
        return mech.release(data, ledger=ledger, dataset_name=args.dataset_name, options=options)
    except ReleaseMismatchError as exc:
        raise _ArgumentProblem("--data", str(exc), "pass the dataset the calibration was made for (rows, columns "
                                                   "and query as calibrated)") from exc
    except JointLeakError as exc:
        raise _ArgumentProblem("--data", str(exc), "release with more noise (a smaller --epsilon), or on other data",
                               code=1) from exc
    except JointAccountingError as exc:
        raise _ArgumentProblem("--data", str(exc), "nothing was released or spent: this release and the earlier ones "
                               "on the same data cannot be accounted together, so releasing it could reveal the "
                               "secret. Calibrate the queries together (one stacked query) and release that, or "
                               "release with more noise. --independent and --dataset-name are declarations, not "
                               "ways around this refusal: they are recorded, and if the releases do read the same "
                               "data the guarantee they state is false", code=1) from exc
    except BudgetExceededError as exc:
        protected = tuple(getattr(mech, "protected", ()) or ())
        name = shlex.quote(protected[0]) if len(protected) == 1 else "NAME"
        raise _ArgumentProblem("--ledger", str(exc), "release with a smaller --epsilon/--delta, or raise the budget "
                               f"on purpose: bayespriv ledger set-budget {shlex.quote(str(args.ledger))} {name} "
                               "EPS[,DELTA]", code=1) from exc
    except AssumptionFailedError as exc:
        raise _ArgumentProblem("--mechanism", str(exc), "follow a remedy above, or pass --accept-failed-assumptions "
                               "to release with the guarantee recorded as NOT ESTABLISHED", code=1) from exc
