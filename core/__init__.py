"""The shared core every layer may import: configuration, job contract, paths, stops, content codings.

It imports nothing else from swath (tests/test_layers.py checks it)."""
