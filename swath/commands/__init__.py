"""CLI command modules. Each module here defines `command`, a click command or group that `swath` adds."""
