"""The Kiel Archive: AMF records and the objects they point to, kept as plain files (the Kiel paper's storage)."""
