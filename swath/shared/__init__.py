"""What the CLI, the web application and the dashboard share: store rows as output, the status snapshot and page.

The top of `swath/` reads store < shared < cli | web | dashboard; the three front ends import this package and
never one another (tests/test_layers.py)."""
