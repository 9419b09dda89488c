"""Flickr: a user's public photos, their info and sizes, and optionally the images (docs/harvest-types.md)."""
