"""Mastodon: hashtag, account, public, search timelines and live streams of any instance (docs/harvest-types.md)."""
