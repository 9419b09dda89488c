"""Large realistic inputs for tests, made by the benchmark's own generator (bench/gen_tweets.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any


def generate_tweets(out: Path, *, tweets: int, warc_pages: int) -> dict[str, Any]:
    """v2 search pages in gzip WARCs under `out`; returns the generator's summary (unique, items_in_warcs...)."""
    spec = importlib.util.spec_from_file_location("gen_tweets", Path(__file__).parents[1] / "bench" / "gen_tweets.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen.generate(tweets=tweets, out=out, warc_pages=warc_pages)
