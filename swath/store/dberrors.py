"""Why the store cannot be opened, in one line that says what to do (the database side of broker_errors)."""

from __future__ import annotations

import re

from swath.messages import codes

# (pattern in the driver's message, code, what to do)
_CAUSES = [
    (r"password authentication failed|role \".*\" does not exist|authentication failed",
     codes.DATABASE_AUTH_REFUSED, "check the user and password in SWATH_DB_URL"),
    (r"database \".*\" does not exist", codes.DATABASE_MISSING,
     "create it (createdb NAME) or fix the database name in SWATH_DB_URL"),
    (r"Connection refused|could not translate host name|timeout expired|No route to host|unable to open database",
     codes.DATABASE_UNREACHABLE, "is the database server running there? check the host, port or path in SWATH_DB_URL"),
]


def classify(exc: BaseException) -> tuple[str, str]:
    """(code, one line) for an error raised while opening the store; the line is the driver's first line,
    followed by what to do when the cause is known."""
    text = str(getattr(exc, "orig", None) or exc)
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    first = re.sub(r"^\(\w+(\.\w+)*\)\s*", "", first)  # SQLAlchemy's "(psycopg2.OperationalError) " prefix
    for pattern, code, advice in _CAUSES:
        if re.search(pattern, text):
            return code, f"{first}; {advice}"
    return codes.UNKNOWN_ERROR, f"{type(exc).__name__}: {first}"
