"""Twitter: API v2 search, user timelines and streams through twarc; SFM's v1.1 and v2 export tables."""
