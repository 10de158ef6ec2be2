"""Tests of parameter networks: quilts, influence and variable elimination."""
