"""The dashboard page: plain server-rendered HTML that reloads itself."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from swath.dashboard.snapshot import Snapshot

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.4em;margin:0 0 .2em} h2{font-size:1.1em;margin:1.4em 0 .4em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;background:#fff} th,td{padding:.25em .5em;border:1px solid #ddd;
text-align:left;vertical-align:top} th{background:#eee} .num{text-align:right}
.ok{color:#176a2b} .bad{color:#a4161a} .warn{color:#8a5a00} .muted{color:#777} small{color:#555}
"""


def _cell(value: Any, cls: str = "") -> str:
    text = "" if value is None else str(value)
    return f'<td class="{cls}">{escape(text)}</td>' if cls else f"<td>{escape(text)}</td>"


def _table(headers: list[str], rows: Iterable[str], empty: str) -> str:
    body = "".join(rows)
    if not body:
        return f'<p class="muted">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _status_class(status: str) -> str:
    return {"completed success": "ok", "completed failure": "bad"}.get(status, "warn")


def _notes(job: dict[str, Any]) -> str:
    parts = [f'<div class="bad">error [{escape(n["code"])}] {escape(n["message"])}</div>' for n in job["errors"]]
    parts += [f'<div class="warn">warning [{escape(n["code"])}] {escape(n["message"])}</div>' for n in job["warnings"]]
    return "".join(parts)


def _job_rows(jobs: list[dict[str, Any]], names: dict[str, str]) -> Iterable[str]:
    for job in jobs:
        totals = ", ".join(f"{n} {label}" for label, n in sorted(job["totals"].items())) or "-"
        yield ("<tr>" + _cell(job["id"]) + _cell(names.get(job["source_id"] or "", job["source_id"] or "-"))
               + _cell(job["type"]) + _cell(job["status"], _status_class(job["status"])) + _cell(job["trigger"])
               + _cell(job["date_started"] or job["created_at"]) + _cell(job["date_ended"] or "-")
               + f'<td class="stats">{escape(totals)}</td>'
               + _cell(f"{job['warcs']['count']} / {job['warcs']['bytes']} B", "num")
               + f"<td>{_notes(job)}</td></tr>")


def render(snap: Snapshot, *, refresh: int, generated: str) -> str:
    names = {s["id"]: s["name"] for s in snap.sources}
    sources = _table(
        ["name", "type", "validation", "schedule", "next due", "collection"],
        ("<tr>" + _cell(s["name"]) + _cell(s["type"])
         + _cell(s["validation"], {"accepted": "ok", "refused": "bad"}.get(s["validation"], "warn"))
         + _cell(f"{s['schedule']['kind']} {s['schedule']['expr']}" if s["schedule"] else "on demand")
         + _cell((s["schedule"] or {}).get("next_due") or "-")
         + _cell(f"{s['collection_set']}/{s['collection']}") + "</tr>" for s in snap.sources),
        "No harvest sources yet.")
    job_headers = ["job", "source", "type", "status", "trigger", "started", "ended", "stats", "WARCs", "messages"]
    running = _table(job_headers, _job_rows(snap.running, names), "Nothing queued or running.")
    recent = _table(job_headers, _job_rows(snap.recent, names), "No finished jobs yet.")
    volume = _table(["collection set", "collection", "WARCs", "bytes"],
                    ("<tr>" + _cell(v["collection_set"]) + _cell(v["collection"]) + _cell(v["warcs"], "num")
                     + _cell(v["bytes"], "num") + "</tr>" for v in snap.volume), "No WARCs recorded yet.")
    if snap.broker_error:
        queues = f'<p class="bad">Broker unreachable: {escape(snap.broker_error)}</p>'
        dead = ""
    else:
        queues = _table(["queue", "messages", "consumers"],
                        ("<tr>" + _cell(q["name"]) + _cell("missing" if q.get("missing") else q["messages"], "num")
                         + _cell(q["consumers"], "num") + "</tr>" for q in snap.queues), "No queues found.")
        queues = f"<p><small>via {escape(snap.queues_via)}</small></p>" + queues
        dead = _table(["routing key", "from queue", "code", "reason"],
                      ("<tr>" + _cell(d["routing_key"]) + _cell(d["queue"]) + _cell(d["code"]) + _cell(d["message"])
                       + "</tr>" for d in snap.dead_letters), "The dead-letter queue is empty.")
    rejected = _table(["routing key", "code", "reason"],
                      ("<tr>" + _cell(r["routing_key"]) + _cell(r["code"]) + _cell(r["message"]) + "</tr>"
                       for r in snap.rejected), "The monitor has refused no message.")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="{refresh}">
<title>swath dashboard</title><style>{STYLE}</style></head><body>
<h1>swath</h1><p><small>generated {escape(generated)}; refreshes every {refresh}s</small></p>
<h2 id="sources">Harvest sources</h2>{sources}
<h2 id="running">Queued and running jobs</h2>{running}
<h2 id="recent">Recent jobs</h2>{recent}
<h2 id="volume">WARC volume per collection</h2>{volume}
<h2 id="queues">Queues</h2>{queues}
<h2 id="dead">Dead-lettered messages</h2>{dead}
<h2 id="rejected">Status messages the monitor refused ({snap.rejected_total})</h2>{rejected}
</body></html>"""
