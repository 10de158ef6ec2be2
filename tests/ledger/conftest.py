"""Fixtures of the ledger tests."""

from __future__ import annotations

import pytest

from bayespriv import Ledger

#: The budgets a test module's ledger starts with, unless the module sets ``LEDGER_BUDGETS`` ({name: (ε, δ)}).
DEFAULT_BUDGETS = {"income": (1.0, 0.0)}


@pytest.fixture
def ledger(request, tmp_path) -> Ledger:
    """A fresh SQLite ledger, ``ledger.sqlite`` in the test's temporary directory, with the budgets of the test
    module's ``LEDGER_BUDGETS`` (default :data:`DEFAULT_BUDGETS`; ``{}``: none)."""
    led = Ledger(tmp_path / "ledger.sqlite")
    for name, (epsilon, delta) in getattr(request.module, "LEDGER_BUDGETS", DEFAULT_BUDGETS).items():
        led.set_budget(name, epsilon, delta)
    return led
