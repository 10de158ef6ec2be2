"""Tests of the mechanisms."""
