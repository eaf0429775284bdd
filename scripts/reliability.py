"""Run the reliability tests and write their figures into docs/reliability.md.

    python scripts/reliability.py [--write docs/reliability.md]

Runs the sync state machine, the kill -9 tests, the 8-device load test and the bad-input tests
(Azurite from .tools/, as scripts/test.sh installs it), and prints a Markdown report of what they
did: examples run, faults injected, kills survived, writes under load, bad inputs refused.
MEMSYNC_STATEFUL_EXAMPLES and MEMSYNC_CRASH_RUNS pass through for the longer profiles.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKER = "<!-- reliability -->"
STRESS = ["tests/test_state_machine.py", "tests/test_crash.py", "tests/test_load.py"]
# the tests that feed memsync bad input (files, remote blobs and keys, archives, hook payloads,
# transcripts, settings) and check it is refused with one sentence and nothing is lost
BAD_INPUT_TESTS = [
    "tests/test_e2e.py::test_every_bad_input_is_refused_with_one_sentence_and_the_rest_syncs",
    "tests/test_e2e.py::test_cli_usage_errors_exit_2_and_bad_settings_exit_1",
    "tests/test_privacy.py::test_hostile_remote_is_refused_and_nothing_lands_outside",
    "tests/test_privacy.py::test_hostile_azure_remote_is_refused_and_nothing_lands_outside",
    "tests/test_privacy.py::test_hostile_keys_never_write_outside_the_memory_dir",
    "tests/test_privacy.py::test_symlink_in_the_memory_dir_is_not_followed_out",
    "tests/test_admin.py::test_corrupted_archive_is_refused_and_nothing_is_written",
    "tests/test_admin.py::test_truncated_archive_is_refused",
    "tests/test_admin.py::test_path_traversal_member_is_refused",
    "tests/test_admin.py::test_missing_and_extra_members_are_refused",
    "tests/test_admin.py::test_symlink_member_is_refused",
    "tests/test_hooks.py::test_hooks_survive_bad_input_and_log_it",
    "tests/test_hooks.py::test_broken_settings_still_exit_zero",
    "tests/test_install.py::test_a_broken_settings_file_is_named_and_left_alone",
    "tests/test_digest.py::test_garbage_records_are_skipped_and_counted_never_fatal",
    "tests/test_digest.py::test_odd_records_never_crash",
    "tests/test_digest.py::test_cli_bad_input_exits_1",
    "tests/test_cli_table.py::test_bad_input_is_one_sentence_with_its_exit_code_and_changes_nothing",
]


def pytest(args: list[str], env: dict[str, str]) -> tuple[int, str, float]:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t0


def fields(output: str, tag: str) -> list[dict[str, str]]:
    """`TAG key=value ...` lines printed by the tests."""
    found = []
    for line in output.splitlines():
        if line.startswith(tag + " "):
            found.append(dict(re.findall(r"(\w+)=(\S+)", line)))
    return found


def bad_inputs(env: dict[str, str]) -> Counter[str]:
    """How many bad inputs each test tried (its parametrized cases)."""
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "bad.xml"
        code, output, _ = pytest([*BAD_INPUT_TESTS, f"--junitxml={xml}"], env)
        if code != 0:
            sys.exit(f"the bad-input tests failed; no report written:\n{output[-2000:]}")
        names = [case.get("name", "") for case in ET.parse(xml).iter("testcase")]
    cases = Counter(name.split("[")[0] for name in names)
    sys.path.insert(0, str(REPO))
    from tests.test_e2e import BAD_INPUTS

    cases["test_every_bad_input_is_refused_with_one_sentence_and_the_rest_syncs"] = len(BAD_INPUTS)
    return cases


def report(env: dict[str, str]) -> str:
    code, output, seconds = pytest(["-s", *STRESS], env)
    if code != 0:
        print(output[-4000:], file=sys.stderr)
        sys.exit("the reliability tests failed; no report written")
    stateful = fields(output, "STATEFUL")
    kills = {k["remote"]: k for k in fields(output, "KILLS")}
    (load,) = fields(output, "LOAD")
    cases = bad_inputs(env)
    examples = sum(int(s["examples"]) for s in stateful)
    faults = Counter()
    for s in stateful:
        for key, value in s.items():
            if key.startswith("fault_"):
                faults[key.removeprefix("fault_")] += int(value)
    rows = [
        "| test | what ran | result |",
        "|---|---|---|",
        f"| sync state machine (3 devices; in-memory and folder stores) | {examples} examples, "
        f"{sum(int(s['syncs']) for s in stateful)} syncs, "
        f"{sum(int(s['converged']) for s in stateful)} full convergence checks | "
        f"{sum(int(s['conflicts']) for s in stateful)} conflicts, all reported with the losing "
        "version in history; no entry lost, no silent conflict |",
        f"| faults injected by the state machine | refused write {faults['refuse']}, "
        f"answer lost after the server wrote {faults['drop']}, ETag moved before the write "
        f"{faults['move']} | all recovered |",
    ]
    for remote, k in sorted(kills.items()):
        rows.append(
            f"| `kill -9` of `memsync sync`, {remote} remote | {k['kills']} kills "
            f"({k['mid']} mid-sync, {k['before']} before any change; {k['after']} runs had "
            f"already finished) | {k['survived']} of {k['kills']} recovered with nothing lost; "
            f"temp files left by the kill: {k['temp_left_memory']} memory dir, "
            f"{k['temp_left_state']} state, {k['temp_left_remote']} remote, all removed by the "
            "next sync |"
        )
    rows.append(
        f"| load on Azurite | {load['devices']} devices × "
        f"{int(load['writes']) // int(load['devices'])} writes into 4 shared files, "
        f"{load['syncs']} syncs, {load['merges']} merges after a lost race | "
        f"{load['writes']} of {load['writes']} writes present exactly once, every device "
        f"identical; {load['seconds']} s in all |"
    )
    rows.append(
        f"| bad input | {sum(cases.values())} cases in {len(cases)} tests (a case may try "
        "several inputs: a corpus of remote blobs, a transcript of garbage lines) | "
        "all refused with one sentence, "
        "nothing lost, nothing written outside the memory dir |"
    )
    detail = "\n".join(f"- `{name}`: {n}" for name, n in sorted(cases.items()))
    return (
        f"Run on {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; the stress tests took {seconds:.0f} s.\n\n"
        + "\n".join(rows)
        + "\n\nBad-input cases per test:\n\n"
        + detail
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="replace the section after the marker")
    args = parser.parse_args()
    env = dict(os.environ)
    azurite = REPO / ".tools" / "node_modules" / ".bin" / "azurite-blob"
    if azurite.exists():
        env.setdefault("MEMSYNC_AZURITE", str(azurite))
    env["CI"] = "true"  # a missing Azurite fails instead of skipping
    text = report(env)
    print(text)
    if args.write:
        before = args.write.read_text(encoding="utf-8").split(MARKER)[0]
        args.write.write_text(before + MARKER + "\n\n" + text, encoding="utf-8")


if __name__ == "__main__":
    main()
