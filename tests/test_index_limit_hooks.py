"""What a hook costs: the log line of a session start made only of memsync's wording and
numbers does not load the secret scanner (a fifth of that hook's time, docs/benchmarks.md),
which is safe only while every log call passes a literal format string."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from tests.devices import make_device

ROOT = Path(__file__).resolve().parent.parent
LOG_CALLS = {"debug", "info", "warning", "error", "exception", "critical"}


def test_every_log_call_in_memsync_passes_a_literal_format_string():
    found = []
    for path in sorted((ROOT / "memsync").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in LOG_CALLS
                and node.args
                and not (
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                )
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_a_log_line_of_numbers_is_not_masked_and_a_name_is(tmp_path: Path):
    from memsync.claude.log import get_logger

    log = get_logger(tmp_path)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    log.info("session-start: pulled %d, merged %d", 3, 4)
    log.warning("post-tool-use: %s not pushed", f"{secret}.md")
    text = (tmp_path / "logs" / "memsync.log").read_text()
    assert "pulled 3, merged 4" in text and secret not in text


def test_a_quiet_session_start_does_not_load_the_scanner(tmp_path: Path):
    (tmp_path / "remote").mkdir()
    device = make_device(tmp_path, "laptop", (tmp_path / "remote").as_uri())
    device.write("feedback_tests.md", "Tests first.\n", type="feedback")
    device.run("sync")
    payload = json.dumps({"session_id": "s", "cwd": str(device.root), "source": "startup"})
    snippet = (
        "import io, sys\nfrom memsync.claude import hooks\n"
        f"hooks.main(['session-start'], io.StringIO({payload!r}), io.StringIO())\n"
    )
    _, loaded = device.imports(snippet, ("memsync.privacy.scanner",))
    assert loaded == []
