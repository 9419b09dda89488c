"""DCAT: data catalogs (JSON-LD, RDF/XML, Turtle) paged through Hydra, mapped with udata's DCAT rules."""
