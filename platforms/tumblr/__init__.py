"""Tumblr: a blog's posts through API v2 (docs/harvest-types.md)."""
