"""CKAN: a portal's datasets (package_search paged by a stable sort, incremental by metadata_modified)."""
