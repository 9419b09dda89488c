"""Harvesters: the engine (base, warc, http, state) and one module per platform or protocol."""
