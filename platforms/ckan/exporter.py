"""CKAN's export table: the metadata backends' dataset table (exporters/datasets.py), over CKAN's records."""

from __future__ import annotations

from swath.exporters.datasets import Datasets


class CkanDatasets(Datasets):
    backend = "ckan"
