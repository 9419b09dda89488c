"""Protocol-independent pieces of metadata harvesting: safe parsing, the udata dataset record, DCAT mapping."""
