"""What ``bayespriv release`` prints: the release as JSON, or as text."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from bayespriv.privacy import Release
    from bayespriv.queries import Query


def _release_json(release: Release, args: argparse.Namespace, query: Query, pairs: Sequence[str] = ()) -> str:
    """The release as JSON (``Release.to_dict``, which ``Release.from_dict`` reads back), with the query's
    fingerprint, the calibration file and the labels of the secret pairs it protects."""
    import json

    out = release.to_dict(level=args.level)
    out["query_fingerprint"] = query.fingerprint
    out["calibration"] = str(args.calibration)
    out["pairs"] = list(pairs)  # the secret pairs the noise hides (the file's)
    return json.dumps(out, indent=2, ensure_ascii=False)


def _release_text(release: Release, args: argparse.Namespace) -> str:
    """One line per component (``mean(x) = 148.52 ± 12.3 (sd)``, its noise-only interval), then the
    mechanism, the guarantee, post-processing and the ledger row."""
    pct = f"{100 * args.level:g}%"
    lines = []
    for line, (low, high) in zip(release.summary(), release.interval(args.level)):
        lines.append(f"{line}    {pct} noise interval [{low:.6g}, {high:.6g}]")
    lines.append(f"mechanism: {release.mechanism}; guarantee {release.guarantee}")
    if not release.established:
        lines.append("NOT ESTABLISHED: released with a failed assumption check")
    if not release.verified:
        lines.append("UNVERIFIED calibration: released with --accept-unverified")
    if release.postprocessed:
        lines.append(f"post-processing (free of privacy cost): {', '.join(release.postprocessed)}")
    if release.ledger_id is not None:
        lines.append(f"ledger row: {release.ledger_id} in {str(args.ledger)!r}")
    return "\n".join(lines)
