"""Tests of calibration files: saving, signing and files saved by earlier versions."""
