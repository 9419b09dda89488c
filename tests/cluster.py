"""A RabbitMQ cluster of its own for tests (no tests here): three nodes of Debian's rabbitmq-server on this
machine, `swath-c1@localhost` ..., each with its own AMQP and distribution ports, data and log directories
under a temp dir and an Erlang cookie of the cluster's own (in a HOME of its own, so neither the system node
on 5672 nor its cookie is touched). Nodes are started in the background in a session of their own; only
those process groups are ever signalled."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# the real scripts: /usr/sbin's wrappers switch to the rabbitmq user (and its HOME, so its cookie)
SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
CTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"
START_TIMEOUT = 240.0  # seconds a node may take to boot on a busy 2-core machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def available() -> bool:
    return os.path.exists(SERVER) and os.path.exists(CTL)


@dataclass
class Node:
    name: str  # swath-c1@localhost
    directory: Path
    amqp_port: int = field(default_factory=free_port)
    dist_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/%2F"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class Cluster:
    """`start()` boots and joins the nodes; `kill(node)` is a lost machine; `restart(node)` brings it back."""

    def __init__(self, base: Path, size: int = 3) -> None:
        self.base = base
        self.home = base / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        cookie = self.home / ".erlang.cookie"
        cookie.write_text(secrets.token_hex(20))
        cookie.chmod(0o400)
        self.nodes = [Node(name=f"swath-c{n}@localhost", directory=base / f"c{n}") for n in range(1, size + 1)]

    # ---- processes ----

    def _env(self, node: Node) -> dict[str, str]:
        d = node.directory
        return {**{k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "SWATH_"))},
                "HOME": str(self.home), "RABBITMQ_NODENAME": node.name, "RABBITMQ_NODE_PORT": str(node.amqp_port),
                "RABBITMQ_DIST_PORT": str(node.dist_port), "RABBITMQ_CONFIG_FILE": str(d / "rabbitmq.conf"),
                "RABBITMQ_CONF_ENV_FILE": str(d / "rabbitmq-env.conf"),
                "RABBITMQ_ENABLED_PLUGINS_FILE": str(d / "enabled_plugins"),
                "RABBITMQ_MNESIA_BASE": str(d / "mnesia"), "RABBITMQ_LOG_BASE": str(d / "log"),
                "RABBITMQ_PID_FILE": str(d / "node.pid"), "ERL_CRASH_DUMP": str(d / "erl_crash.dump"),
                "ERL_EPMD_ADDRESS": "127.0.0.1"}

    def _launch(self, node: Node) -> None:
        d = node.directory
        for sub in ("mnesia", "log"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        (d / "rabbitmq-env.conf").write_text("")  # not the system's, which names the system node
        (d / "enabled_plugins").write_text("[].\n")  # no management listener to clash with the system node's
        (d / "rabbitmq.conf").write_text(f"listeners.tcp.local = 127.0.0.1:{node.amqp_port}\n"
                                         "loopback_users.guest = false\nconsumer_timeout = 604800000\n")
        with (d / "server.out").open("ab") as out:
            node.proc = subprocess.Popen([SERVER], cwd=d, env=self._env(node), stdout=out, stderr=out,
                                         start_new_session=True)

    def ctl(self, node: Node, *args: str, timeout: float = 120, check: bool = True) -> str:
        done = subprocess.run([CTL, "-q", "-n", node.name, *args], env=self._env(node), capture_output=True,
                              text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl -n {node.name} {' '.join(args)} -> {done.returncode}: "
                               f"{done.stderr.strip() or done.stdout.strip()}\n{self.log_tail(node)}")
        return done.stdout

    def await_startup(self, node: Node) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # before the node registered, rabbitmqctl cannot reach it at all: ask again
            assert node.alive(), f"{node.name} exited while booting\n{self.log_tail(node)}"
            done = subprocess.run([CTL, "-q", "-n", node.name, "await_startup", "--timeout", "30"],
                                  env=self._env(node), capture_output=True, text=True, timeout=120)
            if done.returncode == 0:
                return
            assert time.monotonic() < deadline, f"{node.name} did not boot\n{self.log_tail(node)}"
            time.sleep(1)

    def start(self) -> Cluster:
        for node in self.nodes:
            self._launch(node)
        for node in self.nodes:
            self.await_startup(node)
        first = self.nodes[0]
        for node in self.nodes[1:]:
            self.ctl(node, "stop_app")
            self.ctl(node, "join_cluster", first.name)
            self.ctl(node, "start_app")
        self.ctl(first, "await_online_nodes", str(len(self.nodes)), "--timeout", str(int(START_TIMEOUT)),
                 timeout=START_TIMEOUT + 30)
        return self

    def kill(self, node: Node) -> None:
        """kill -9 the node's processes (the machine is gone), then reap them."""
        assert node.proc is not None
        os.killpg(node.proc.pid, signal.SIGKILL)
        node.proc.wait(timeout=60)

    def restart(self, node: Node) -> None:
        self._launch(node)
        self.await_startup(node)

    def stop(self) -> None:
        """Stop every node this cluster started; kill what does not stop."""
        for node in self.nodes:
            if node.alive():
                self.ctl(node, "stop", timeout=120, check=False)
        for node in self.nodes:
            if node.proc is None:
                continue
            try:
                node.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(node.proc.pid, signal.SIGKILL)  # what is left of its group (the node's own processes)
            except ProcessLookupError:
                pass
            node.proc.wait(timeout=60)

    # ---- what the cluster says ----

    def url_list(self, first: int = 0) -> str:
        """SWATH_AMQP_URL naming every node, starting with node `first` (spreads clients over the nodes)."""
        order = self.nodes[first:] + self.nodes[:first]
        return ",".join(node.url for node in order)

    def running(self) -> list[Node]:
        return [node for node in self.nodes if node.alive()]

    def queues(self) -> list[dict[str, Any]]:
        """name, type, messages, leader, members and online members of every queue (asked of a running node)."""
        out = self.ctl(self.running()[0], "list_queues", "name", "type", "messages", "leader", "members", "online",
                       "--formatter", "json")
        return list(json.loads(out))

    def leader(self, queue: str) -> Node:
        row = next(q for q in self.queues() if q["name"] == queue)
        return next(node for node in self.nodes if node.name == row["leader"])

    def running_nodes(self) -> list[str]:
        status = json.loads(self.ctl(self.running()[0], "cluster_status", "--formatter", "json"))
        return sorted(status["running_nodes"])

    def log_tail(self, node: Node, lines: int = 30) -> str:
        logs = sorted((node.directory / "log").glob("*.log")) + [node.directory / "server.out"]
        text = "\n".join(path.read_text(errors="replace") for path in logs if path.exists())
        return "\n".join(text.splitlines()[-lines:])
