"""Protocol-independent pieces of metadata harvesting: safe parsing, the udata dataset record, vocabularies,
languages, dates (DCAT's own mapping is in its room, platforms/dcat/)."""
