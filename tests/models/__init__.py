"""Tests of the ready-made scenarios (bayespriv.models)."""
