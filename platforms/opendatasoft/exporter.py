"""OpenDataSoft's export table: the metadata backends' dataset table (exporters/datasets.py), over its records."""

from __future__ import annotations

from swath.exporters.datasets import Datasets


class OdsDatasets(Datasets):
    backend = "opendatasoft"
