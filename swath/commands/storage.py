"""`swath storage`: the WARCs in object storage and their replica (docs/deployment.md "Replicas and
verification"): `verify` checks every indexed WARC's copy in the primary and the replica, `replicate` copies to
the replica what is missing there."""

from __future__ import annotations

import sys
from typing import Any

import click

from swath.commands.common import JSON_OPTION, ProgressLine, config_of, emit, handles_errors, open_store

COLLECTION_OPTION = click.option("--collection", "collection_id", metavar="ID",
                                 help="Only this collection's WARCs (default: every indexed WARC).")


@click.group(name="storage")
def command() -> None:
    """The WARCs in storage: verify every indexed WARC's copies, copy what the replica lacks."""


@command.command(name="verify")
@COLLECTION_OPTION
@click.option("--deep", is_flag=True, help="Read every copy whole and hash it (else: HEAD, size and the SHA-1 the "
                                           "object was stored with).")
@JSON_OPTION
@click.pass_context
@handles_errors
def verify(ctx: click.Context, collection_id: str | None, deep: bool, as_json: bool) -> None:
    """Check every WARC in the WARC index in the primary store and the replica (SWATH_STORAGE_REPLICA_URL):
    it exists, has the size and SHA-1 warc_created announced. Prints one line per copy that is missing or differs
    and a summary; the result goes into the store (the Operations page shows it). Exit status 1 when any copy
    is missing or differs."""
    from swath.replicas import Finding
    from swath.replicas import verify as run

    progress = ProgressLine(sys.stderr)

    def found(finding: Finding) -> None:
        if not as_json:
            progress.close()
            click.echo(f"{finding.result}\t{finding.target}\t{finding.warc_id}\t{finding.url}\t{finding.detail}")

    try:
        result = run(config_of(ctx), open_store(ctx), collection_id=collection_id, deep=deep,
                     progress=lambda n: progress(f"verified {n} WARC(s)"), found=found)
    finally:
        progress.close()
    data: dict[str, Any] = {"warcs": result.warcs, "copies": result.copies, "ok": result.ok,
                            "missing": result.missing, "differs": result.differs, "deep": deep,
                            "findings": [vars(f) for f in result.findings]}
    emit(data, as_json, f"{result.warcs} WARC(s), {result.copies} copies checked{' (deep)' if deep else ''}: "
                        f"{result.ok} ok, {result.missing} missing, {result.differs} differ")
    if result.findings:
        ctx.exit(1)


@command.command(name="replicate")
@COLLECTION_OPTION
@JSON_OPTION
@click.pass_context
@handles_errors
def replicate(ctx: click.Context, collection_id: str | None, as_json: bool) -> None:
    """Copy to the replica every indexed WARC whose copy there is missing or differs (server-side within one
    endpoint, else streamed and hashed), each copy checked (size, SHA-1) and recorded. Exit status 1 when a WARC
    could not be copied (its primary copy is not the WARC the index records)."""
    from swath.replicas import catch_up

    progress = ProgressLine(sys.stderr)
    try:
        result = catch_up(config_of(ctx), open_store(ctx), collection_id=collection_id,
                          progress=lambda n: progress(f"checked {n} WARC(s)"))
    finally:
        progress.close()
    if not as_json:
        for warc_id, why in result.failed:
            click.echo(f"failed\t{warc_id}\t{why}")
    data = {"warcs": result.warcs, "copied": result.copied, "failed": [list(f) for f in result.failed]}
    emit(data, as_json, f"{result.warcs} WARC(s) checked: {len(result.copied)} copied to the replica, "
                        f"{len(result.failed)} failed")
    if result.failed:
        ctx.exit(1)
