"""Only the C part of the build; everything else is in pyproject.toml."""

from setuptools import Extension, setup

# The CSV record encoder (exporters/_csvrow.c). Optional: without a C compiler the build goes on and
# exporters/writers.py uses the csv module, which writes the same bytes, several times slower.
setup(ext_modules=[Extension("swath.exporters._csvrow", sources=["exporters/_csvrow.c"], optional=True,
                             extra_compile_args=["-O2"])])
