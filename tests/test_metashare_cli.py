"""`swath metashare import` and `swath metashare serve` as real processes, over HTTPS with a self-signed cert."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import requests

from swath.platforms.metashare.client import MetashareClient, sync
from swath.platforms.metashare.storage import LRStorage
from tests.metasharekit import USERS

SWATH = str(Path(sys.executable).parent / "swath")


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return cert, key


def test_import_then_serve_over_https(tmp_path: Path, fixtures_dir: Path, certificate) -> None:
    xml_files = sorted((fixtures_dir / "metashare").glob("*.xml"))
    node_dir = tmp_path / "node"
    imported = subprocess.run([SWATH, "metashare", "import", str(node_dir), *map(str, xml_files),
                               "--source-url", "https://node.example/"], capture_output=True, text=True, check=True)
    ids = [line.split("\t")[0] for line in imported.stdout.splitlines()]
    assert sorted(ids) == sorted(LRStorage(root=node_dir).ids()) and len(ids) == len(xml_files)

    users = tmp_path / "users.txt"
    users.write_text("# sync accounts\n" + "".join(f"{u}:{p}\n" for u, p in USERS.items()))
    cert, key = certificate
    server = subprocess.Popen([SWATH, "metashare", "serve", str(node_dir), "--users", str(users), "--port", "0",
                               "--certfile", str(cert), "--keyfile", str(key)],
                              stderr=subprocess.PIPE, text=True)
    try:
        banner = server.stderr.readline()
        url = banner.split(" at ")[1].split()[0]
        assert url.startswith("https://127.0.0.1:")
        session = requests.Session()
        session.trust_env = False  # REQUESTS_CA_BUNDLE in the environment would override verify
        session.verify = str(cert)
        client = MetashareClient(session=session, base_url=url, timeout=60)
        client.login("harvester", USERS["harvester"])
        local = LRStorage(root=tmp_path / "client")
        results = Counter(o.result for o in sync(client, local))
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert results == {"added": len(ids)}
    assert b'"source_url":"https://node.example"' in local.get(ids[0]).storage_json


def test_import_refuses_malformed_xml(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<resourceInfo><unclosed></resourceInfo>")
    result = subprocess.run([SWATH, "metashare", "import", str(tmp_path / "node"), str(bad), "--source-url", "http://x"],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "not well-formed" in result.stderr
    assert not list(LRStorage(root=tmp_path / "node").ids())


def test_users_file_with_a_bad_line_names_only_the_line(tmp_path: Path) -> None:
    users = tmp_path / "users.txt"
    users.write_text("alice-secret-without-colon\n")
    result = subprocess.run([SWATH, "metashare", "serve", str(tmp_path), "--users", str(users), "--port", "0"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "line 1" in result.stderr
    assert "alice-secret-without-colon" not in result.stderr
