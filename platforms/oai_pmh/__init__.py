"""OAI-PMH: a repository's records (ListRecords, resumption tokens, incremental by datestamp) mapped to datasets."""
