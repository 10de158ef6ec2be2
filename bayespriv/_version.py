"""The library's version, in a module that imports nothing (saved files record it)."""

__version__ = "0.1.0"
