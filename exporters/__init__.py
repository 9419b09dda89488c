"""Exporters: read harvested WARCs and write CSV/TSV/XLSX/JSON/full JSON/dehydrated ids (issue 5)."""
