"""Tests of the diagnostics: plots, HTML and readable reports."""
