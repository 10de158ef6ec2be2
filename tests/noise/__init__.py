"""Tests of the exact noise samplers and released noise."""
