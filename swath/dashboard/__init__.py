"""`swath dashboard`: a read-only, self-refreshing HTML page over the store and the broker."""
