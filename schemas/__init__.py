"""JSON Schemas (draft 2020-12) for every message swath consumes or publishes; data files only."""
