"""DCAT's export table: the metadata backends' dataset table (exporters/datasets.py), over DCAT's records."""

from __future__ import annotations

from swath.exporters.datasets import Datasets


class DcatDatasets(Datasets):
    backend = "dcat"
