"""SWATH_AMQP_URL with one node or several (no broker needed): how the list is read, the order clients try the
nodes in, and that no password of any node reaches a message."""

from __future__ import annotations

from swath.commands.config import mask_url
from swath.core.config import DEFAULT_AMQP_URL
from swath.messages.broker_errors import classify, safe_url
from swath.messages.nodes import Nodes, amqp_urls

THREE = "amqp://u:pw1@h1:5672/v, amqp://u:pw2@h2:5673/v ,amqp://u:pw3@h3:5674/v"


def test_one_url_is_one_node_exactly_as_given() -> None:
    assert amqp_urls(DEFAULT_AMQP_URL) == [DEFAULT_AMQP_URL]
    nodes = Nodes(DEFAULT_AMQP_URL, name="n", heartbeat=60)
    nodes.failed()
    assert [(p.host, p.port) for p in nodes.parameters()] == [("localhost", 5672)]


def test_several_urls_are_tried_in_order_and_a_lost_node_goes_last() -> None:
    assert amqp_urls(THREE) == ["amqp://u:pw1@h1:5672/v", "amqp://u:pw2@h2:5673/v", "amqp://u:pw3@h3:5674/v"]
    nodes = Nodes(THREE, name="worker-consumer", heartbeat=30)
    assert [p.host for p in nodes.parameters()] == ["h1", "h2", "h3"]
    assert {(p.heartbeat, p.client_properties["connection_name"]) for p in nodes.parameters()} == \
        {(30, "worker-consumer")}
    nodes.failed()
    assert [p.host for p in nodes.parameters()] == ["h2", "h3", "h1"]
    assert nodes.current().host == "h2" and nodes.current_url() == "amqp://u:pw2@h2:5673/v"
    nodes.failed()
    nodes.failed()
    assert nodes.current().host == "h1"  # round again


def test_no_password_of_any_node_is_shown() -> None:
    shown = [safe_url(THREE), mask_url(THREE.replace(" ", "")), classify(ConnectionRefusedError(), THREE).message]
    for text in shown:
        assert "h1" in text and "h3" in text, text
        assert not any(pw in text for pw in ("pw1", "pw2", "pw3")), text
