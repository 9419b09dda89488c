"""docker-compose.yml and the Dockerfile, checked with Debian's docker-compose (no Docker engine runs here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from swath.services import all_services

ROOT = Path(__file__).resolve().parents[1]
SERVICES = {"rabbitmq", "postgres", "broker-setup", "monitor", "scheduler", "dashboard", "cli", "web"}


def compose(*args: str) -> str:
    exe = shutil.which("docker-compose")
    assert exe, "Debian's docker-compose is needed to validate docker-compose.yml: apt-get install -y docker-compose"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "POSTGRES_"))}
    return subprocess.run([exe, "-f", str(ROOT / "docker-compose.yml"), *args], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True, timeout=120).stdout


@pytest.fixture(scope="module")
def resolved() -> dict:
    """`docker-compose config` (anchors merged, variables filled in) as data, read with Debian's python3-yaml."""
    out = compose("config")
    to_json = "import json,sys,yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"
    loaded = subprocess.run(["/usr/bin/python3", "-c", to_json], input=out, capture_output=True, text=True, check=True)
    return json.loads(loaded.stdout)


def test_compose_file_validates_and_has_one_service_per_worker(resolved: dict) -> None:
    compose("config", "-q")
    workers = set(all_services())
    services = set(compose("config", "--services").split())
    missing = workers - services
    assert not missing, f"add a service per new worker to docker-compose.yml (copy a worker block): {sorted(missing)}"
    assert services == SERVICES | workers, f"services that run no worker: {sorted(services - SERVICES - workers)}"
    for name in workers:
        svc = resolved["services"][name]
        assert svc["command"] == ["worker", name]
        # scalable with --scale: no fixed name, no host port
        assert "container_name" not in svc and "ports" not in svc
        assert "swath-data:/swath-data:rw" in svc["volumes"]  # the shared data volume
        assert "@rabbitmq:5672/" in svc["environment"]["SWATH_AMQP_URL"]


def test_rabbitmq_monitor_scheduler_dashboard(resolved: dict) -> None:
    svcs = resolved["services"]
    rabbit = svcs["rabbitmq"]
    assert rabbit["image"].endswith("-management")
    conf = [m for m in rabbit["volumes"] if m.split(":")[1].startswith("/etc/rabbitmq/")]
    assert len(conf) == 1 and Path(conf[0].split(":")[0]).resolve() == ROOT / "deploy" / "rabbitmq" / "rabbitmq.conf"
    assert svcs["monitor"]["command"] == ["monitor"] and svcs["scheduler"]["command"] == ["scheduler"]
    assert svcs["dashboard"]["command"][0] == "dashboard"
    assert "SWATH_RABBITMQ_MANAGEMENT_URL" in svcs["dashboard"]["environment"]
    assert svcs["web"]["command"][0] == "web" and "SWATH_SECRET_KEY" in svcs["web"]["environment"]
    for name in ("monitor", "scheduler", "dashboard", "web"):
        assert svcs[name]["environment"]["SWATH_DB_URL"].startswith("postgresql+psycopg2://")
    assert {"swath-data"} <= set(resolved["volumes"])


def test_every_requester_gets_the_credentials_sources_reference(resolved: dict) -> None:
    """scheduler, web and cli launch harvests: each reads env:NAME credentials from its own environment."""
    svcs = resolved["services"]
    credentials = {"SWATH_SECRET_KEY", "TWITTER_BEARER_TOKEN", "FLICKR_API_KEY", "FLICKR_API_SECRET", "TUMBLR_API_KEY"}
    for name in ("scheduler", "web", "cli"):
        assert credentials <= set(svcs[name]["environment"]), name


def test_deployment_md_names_every_service_that_is_not_a_worker() -> None:
    text = (ROOT / "docs" / "deployment.md").read_text()
    table = text[text.index("| service | what it runs |"):].split("\n\n", 1)[0]
    named = set(re.findall(r"`([a-z-]+)`", table))
    assert SERVICES <= named, f"docs/deployment.md's services table misses {sorted(SERVICES - named)}"


def test_dockerfile_copies_every_package_and_runs_swath() -> None:
    text = (ROOT / "Dockerfile").read_text()
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    copied = set(re.findall(r"^COPY (\S+) \1$", text, re.M))
    assert {"swath", *folders} <= copied
    assert 'ENTRYPOINT ["swath"]' in text and re.search(r"^FROM python:3\.11", text, re.M)
    assert re.search(r"^USER (?!root)\w+", text, re.M)  # workers do not run as root
