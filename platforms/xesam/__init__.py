"""Xesam-PMH: metadata harvesting over D-Bus (org.freedesktop.xesam.pmh): the crawler and a reference target."""
