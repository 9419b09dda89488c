"""What `swath xesam serve` uses of this room: the reference target served on a session bus.

The CLI (swath/commands/xesam.py) imports this module only; the room's other modules are its own. It is
imported with every `swath` command, so the bus and the target (and with them jeepney) load only when a
target is served.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from swath.core.errors import SwathError
from swath.messages import codes
from swath.platforms.xesam.payload import DEFAULT_TARGET_PATH

if TYPE_CHECKING:
    from swath.platforms.xesam.bus import Endpoint
    from swath.platforms.xesam.target import Target

__all__ = ["DEFAULT_TARGET_PATH", "ServeError", "ServedTarget", "serve_target"]


class ServeError(SwathError):
    """The target could not be served: the bus is unreachable (xesam_no_bus), or refused the name or the object
    (bad_request: the name is owned by another connection, say)."""

    code = codes.XESAM_NO_BUS


@dataclass(frozen=True)
class ServedTarget:
    """A target on the bus, serving until `stop`."""

    target: Target
    endpoint: Endpoint

    @property
    def records(self) -> int:
        return len(self.target.index.entries)

    def stop(self, message: str) -> None:
        """Invalidate every crawler with `message` and leave the bus."""
        self.target.stop(message)
        self.endpoint.close()


def serve_target(*, address: str, bus_name: str, directory: Path, object_path: str, horizon_ms: int,
                 history_ms: int | None, poll: float) -> ServedTarget:
    """Serve the JSON records in `directory` as `bus_name` `object_path` on the bus at `address`."""
    from swath.platforms.xesam.bus import BusError, Endpoint
    from swath.platforms.xesam.target import Target

    try:
        endpoint = Endpoint(address=address)
    except (OSError, RuntimeError, ValueError) as exc:
        raise ServeError(f"cannot connect to the session bus: {exc}") from None
    try:
        endpoint.request_name(bus_name)
        target = Target(endpoint=endpoint, directory=directory, path=object_path, horizon_ms=horizon_ms,
                        history_ms=history_ms, poll=poll)
        target.start()
    except BusError as exc:
        endpoint.close()
        raise ServeError(str(exc), code=codes.BAD_REQUEST) from None
    return ServedTarget(target=target, endpoint=endpoint)
