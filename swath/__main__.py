"""`python -m swath` is the `swath` command."""

from swath.cli import main

main()
