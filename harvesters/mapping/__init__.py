"""Protocol-independent pieces of metadata harvesting: safe parsing, the udata dataset record, vocabularies,
languages, dates (DCAT's and OAI-PMH's own mappings are in their rooms, platforms/dcat/ and platforms/oai_pmh/)."""
