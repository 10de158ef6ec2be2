"""Tests of the data models (Gaussian, empirical, Bayesian networks, PyMC)."""
