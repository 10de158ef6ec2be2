"""Tests of bayespriv.audit: attacks, likelihood ratios and the coverage harness."""
