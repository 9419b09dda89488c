"""META-SHARE Harvesting Protocol v1.0: a client that syncs a node's LRs and a node server that serves them."""
