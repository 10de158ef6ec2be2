"""``python -m bayespriv.cli``: the ``bayespriv`` command."""

import sys

from bayespriv.cli import main

sys.exit(main())
