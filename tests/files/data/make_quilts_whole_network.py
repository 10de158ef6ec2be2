"""Write quilts_whole_network.json: a whole-network quilt calibration computed by the package at ``sys.argv[1]``.

The fixture was generated from the code before the quilt pipeline shared its graph index and CPD tables per
network (commit 02631be), with::

    PYTHONPATH=<worktree at 02631be> python tests/files/data/make_quilts_whole_network.py <worktree at 02631be>

Every node of a 20-node random sparse binary parameter network (``benchmarks/bench_quilts.random_network(20, 3)``)
is sensitive; the query is a stack of bounded means over every 4th node; candidate search with 8 refinement
moves. Floats are stored as ``float.hex`` so the comparison is bit for bit.
"""

import json
import sys
import warnings
from pathlib import Path


def _candidate_search(refine: int) -> dict:
    """The keywords of a candidate search with ``refine`` moves: ``search=QuiltSearch(...)``, or, for a package
    that predates :class:`~bayespriv.networks.QuiltSearch` (commit 02631be), its fields as keywords of their own."""
    try:
        from bayespriv.networks.quilts import QuiltSearch
    except ImportError:
        return {"exhaustive": False, "refine": refine}
    return {"search": QuiltSearch(exhaustive=False, refine=refine)}


def main() -> None:
    """Compute the calibration with the package at ``sys.argv[1]`` and write the fixture beside this script."""
    warnings.filterwarnings("ignore")
    code = sys.argv[1]
    sys.path[:0] = [code, str(Path(code) / "benchmarks")]

    import bayespriv as bp  # noqa: E402
    from bench_quilts import random_network  # noqa: E402
    from bayespriv.networks.quilts import ParameterNetwork, calibrate_quilts  # noqa: E402

    bn = random_network(20, 3)
    names = list(bn.nodes())
    net = ParameterNetwork(bn, columns={v: v for v in names})
    query = bp.stack(*[bp.mean(v, bounds=(0.0, 1.0 + k % 3)) for k, v in enumerate(names[::4])])
    cal = calibrate_quilts(net, names, query, n_records=50, **_candidate_search(refine=8))
    out = {
        "generated": ("by tests/files/data/make_quilts_whole_network.py from the code at commit 02631be "
                      "(before the per-network graph index, CPD tables and bucket memo); see that script's docstring"),
        "sensitivity": cal.sensitivity.hex(),
        "n_quilts": {str(v): int(k) for v, k in cal.n_quilts.items()},
        "skipped": {str(v): int(k) for v, k in cal.skipped.items()},
        "candidates": {str(v): [[sorted(map(str, c.quilt.quilt)), sorted(map(str, c.quilt.remote)), c.sensitivity.hex(),
                                 float(c.influence.value).hex()] for c in cal.candidates[v]] for v in cal.sensitive},
    }
    Path(__file__).with_name("quilts_whole_network.json").write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":  # pytest imports this file for doctests: nothing runs then
    main()
