"""`memsync digest`: the session digest written by Claude from a session transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memsync.cli.common import MemoryDirOpt, ProjectOpt, RemoteOpt, app, context, err, out


@app.command()
def digest(
    date: Annotated[
        str | None,
        typer.Option("--date", help="Digest day, YYYY-MM-DD (default: the day the session ended)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the digest; write and push nothing.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Claude model (env MEMSYNC_MODEL; default: setting)."),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", help="Session id (default: this project's latest session)."),
    ] = None,
    transcript: Annotated[
        Path | None,
        typer.Option("--transcript", help="A session transcript (.jsonl) to digest."),
    ] = None,
    memory_dir: MemoryDirOpt = None,
    remote: RemoteOpt = None,
    project: ProjectOpt = None,
) -> None:
    """Write a session digest with Claude from a Claude Code transcript, then push it."""
    from memsync.claude.digest import digest_date, make_digest, write_digest
    from memsync.claude.transcript import find_transcript, read_transcript
    from memsync.cli import checks

    checks.day("--date", date)  # a bad value is a usage error before anything is read
    if session is not None:
        from memsync.claude.transcript import _SESSION_ID

        if not _SESSION_ID.match(session):
            from memsync.util.errors import UsageError

            raise UsageError(
                f"--session {session!r} is not a session id (letters, digits, '-' and '_')"
            )
    ctx = context(memory_dir, remote, project)
    path = find_transcript(session=session, path=transcript)
    read = read_transcript(path)
    day = digest_date(read, date)
    chosen_model = model or str(ctx.setting("model"))
    result = make_digest(ctx, read, chosen_model, day, session or read.session_id)
    if read.malformed or read.unknown:
        err.print(f"{path.name}: {read.describe()}", markup=False)
    if dry_run:
        out.print(result.preview(), markup=False, highlight=False, end="")
        return
    sync = write_digest(ctx, result)
    names = ", ".join(sorted(result.files))
    out.print(f"Wrote {names} (session {result.session_id}).", markup=False)
    if sync is None or sync.disabled:
        out.print("Not pushed: sync is off.", markup=False)
    elif sync.offline:
        err.print(f"Remote unreachable ({sync.offline}); the push is queued.", markup=False)
    for name, reason in {**sync.refused, **sync.errors}.items() if sync else ():
        err.print(f"Not pushed {name}: {reason}", markup=False)
