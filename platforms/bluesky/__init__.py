"""Bluesky: an actor's posts, post search, a custom feed (XRPC through atproto) and the Jetstream firehose."""
