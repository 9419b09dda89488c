"""`swath web`: the web application for archivists (docs/web.md), on the requester and the store."""
