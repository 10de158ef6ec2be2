"""Tests of the examples: notebooks, screenshots and the census study."""
