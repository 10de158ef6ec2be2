"""Tests of the privacy guarantees and the accountant."""
