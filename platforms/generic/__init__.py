"""Generic: a tiny built-in platform for tests and examples (JSON pages and newline-delimited streams)."""
