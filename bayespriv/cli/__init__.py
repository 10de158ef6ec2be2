"""The ``bayespriv`` command.

Subcommands
-----------
``bayespriv demo``
    The hospital experiment of §4.2 of Zhang, Ohrimenko, Yang & Cummings,
    *Attribute Privacy* (FAccT 2022): calibrate the three queries on the
    paper's generator, build the Attribute-Private Gaussian Mechanism, release
    on one simulated hospital, and set the results beside the paper's values.
``bayespriv calibrate SCRIPT.py --out cal.nc``
    Run a calibration script (it defines ``model``, ``pairs`` and ``query``;
    template: ``examples/calibration_template.py``) and save the calibration.
``bayespriv inspect cal.nc [--out DIR]``
    Print a saved calibration's summary; with ``--out``, write its plots.
``bayespriv release cal.nc --script SCRIPT.py --mechanism NAME --epsilon E --data data.csv``
    Build a mechanism on a saved calibration and release on a CSV file, with
    an optional ledger; prints JSON.
``bayespriv ledger budget.sqlite`` (short for ``bayespriv ledger report budget.sqlite``)
    Print a ledger's budgets: spent, remaining, releases, refusals, and every
    creation or change of a budget.
``bayespriv ledger set-budget budget.sqlite NAME EPS[,DELTA] [--reason TEXT]``
    Create a budget or change it on purpose (recorded in the ledger).
    ``release --budget NAME=EPS[,DELTA]`` only creates a budget: it is a no-op
    when the budget already has that value and refuses to change it.
``bayespriv key [--rotate] [--show-secret]``
    Show where the signing key of calibration files is and its fingerprint;
    rotate it (old files stop verifying).

Calibration files are signed with the data owner's key and verified on load;
``inspect --trust-unverified`` shows a file that does not verify (with a
banner), and ``release`` from one needs ``--trust-unverified`` and
``--accept-unverified`` (the JSON then says ``"verified": false``).

Errors
------
Every failure prints one line on stderr,
``bayespriv: error: <what> (<argument>): <what to do>``, and no traceback
(``--debug`` re-raises instead). Output files are never written through a
symbolic link or over a directory or device, and are written atomically (a
temporary file in the same directory, fsync, then rename).

Exit codes: 0 success; 1 a refusal or an error of the library (budget
exceeded, failed assumption, ...); 2 a wrong argument (the message names it).
"""

from bayespriv.cli.entry import main

__all__ = ["main"]
