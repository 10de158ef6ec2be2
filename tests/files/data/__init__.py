"""Scripts that wrote the saved files of tests/files (each also runs as a script)."""
