"""Tests of the calibration engine, its laws and assumptions."""
