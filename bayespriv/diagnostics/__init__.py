"""Diagnostics: plots (and reports) that only read results, never compute them."""

from .plots import plot_calibration

__all__ = ["plot_calibration"]
