"""Platforms: one package (a room) per platform, holding everything that platform is and nothing else.

A room: `declaration.py` (data only, importing only swath.core; pyproject.toml's `swath.platforms` entry point
names it), `harvester.py` with its client and stream helpers, `exporter.py` with its export tables, and, for a
platform with a command of its own, `public.py`: what that command (in swath/commands/) uses, the one module of
a room a front end may import. A room imports the core, messages and the harvest and export engines; the
engines never import a room, and no room imports another (tests/test_layers.py). docs/adding-a-platform.md
says how to add one.
"""
