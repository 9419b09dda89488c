"""Large realistic inputs for tests, made by the benchmark's own generator (bench/gen_tweets.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any


def bench_module(name: str) -> Any:
    """A generator module of bench/ (not a package), loaded by path."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "bench" / f"{name}.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def generate_tweets(out: Path, *, tweets: int, warc_pages: int) -> dict[str, Any]:
    """v2 search pages in gzip WARCs under `out`; returns the generator's summary (unique, items_in_warcs...)."""
    return bench_module("gen_tweets").generate(tweets=tweets, out=out, warc_pages=warc_pages)
