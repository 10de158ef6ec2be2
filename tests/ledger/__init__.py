"""Tests of the privacy ledger and composition."""
