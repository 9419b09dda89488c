"""Only the C part of the build; everything else is in pyproject.toml."""

from setuptools import Extension, setup

# Two small C encoders, both optional: without a C compiler the build goes on and the Python code they
# speed up writes the same bytes, slower. exporters/_csvrow.c: CSV records of every table (writers.py falls back
# to the csv module); platforms/twitter/_jsontext.c, in Twitter's room: the Twitter v2 table's entity columns
# (exporter_v2.py's own code otherwise).
setup(ext_modules=[
    Extension("swath.exporters._csvrow", sources=["exporters/_csvrow.c"], optional=True, extra_compile_args=["-O2"]),
    Extension("swath.platforms.twitter._jsontext", sources=["platforms/twitter/_jsontext.c"], optional=True,
              extra_compile_args=["-O2"]),
])
