"""``bayespriv key``: show or rotate the key that signs calibration files."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from bayespriv.errors import BayesPrivError


def _key_cmd(args: argparse.Namespace) -> int:
    from bayespriv.files import signing

    source = (f"environment variable {signing.ENV_KEY}" if os.environ.get(signing.ENV_KEY)
              else f"key file {signing.key_path()}")
    if args.rotate:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fingerprint = signing.rotate_key()
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
        print(f"{'key:':<13} {source} (new key)")
    else:
        try:
            fingerprint = signing.key_fingerprint()
        except BayesPrivError:
            if os.environ.get(signing.ENV_KEY):
                raise
            print(f"{'key:':<13} {source} (none yet: the first save of a calibration creates it, or run "
                  "`bayespriv key --rotate` to create it now)")
            return 0
        print(f"{'key:':<13} {source}")
    print(f"{'fingerprint:':<13} {fingerprint}")
    if args.show_secret:
        print("warning: anyone holding this key can forge calibration files that verify as yours", file=sys.stderr)
        print(f"{'secret key:':<13} {signing.load_key().hex()}")
    return 0
