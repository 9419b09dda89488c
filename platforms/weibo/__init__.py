"""Weibo: export only, the posts of legacy SFM collections (swath has no Weibo harvester; docs/exporting.md)."""
