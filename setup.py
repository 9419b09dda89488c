"""Only the C part of the build; everything else is in pyproject.toml."""

from setuptools import Extension, setup

# Three small C helpers, all optional: without a C compiler the build goes on and the Python code they speed up
# writes the same bytes, slower. exporters/_csvrow.c: CSV records of every table (writers.py falls back to the csv
# module); exporters/_tablerow.c: every table's row function (table.py's generated Python otherwise);
# platforms/twitter/_jsontext.c, in Twitter's room: the v2 table's shared values, entity columns and JSON cells
# (exporter_v2.py's own code otherwise). They share the byte buffer of exporters/_outbuf.h.
_C = {"optional": True, "extra_compile_args": ["-O2"], "include_dirs": ["exporters"],
      "depends": ["exporters/_outbuf.h"]}
setup(ext_modules=[
    Extension("swath.exporters._csvrow", sources=["exporters/_csvrow.c"], **_C),
    Extension("swath.exporters._tablerow", sources=["exporters/_tablerow.c"], **_C),
    Extension("swath.platforms.twitter._jsontext", sources=["platforms/twitter/_jsontext.c"], **_C),
    # harvesters/_gzmembers.c: a batch of WARC records gzipped in one call (warc_gzip.py's zlib code otherwise)
    Extension("swath.harvesters._gzmembers", sources=["harvesters/_gzmembers.c"], libraries=["z"],
              optional=True, extra_compile_args=["-O2"]),
])
