"""OAI-PMH's export table: the metadata backends' dataset table (exporters/datasets.py), over OAI-PMH's records."""

from __future__ import annotations

from swath.exporters.datasets import Datasets


class OaiRecords(Datasets):
    backend = "oai_pmh"
