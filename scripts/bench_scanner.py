"""How long the secret scanner takes: on the typical memory files of tests/corpus/clean (what
the PostToolUse hook scans after each memory write), on importing it and scanning a first file
in a fresh process (as the hook does: the patterns a text can match are compiled then), and on
a megabyte of digit groups (the worst case for the card search).
Usage: python scripts/bench_scanner.py [--typical]"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

from memsync.privacy.scanner import scan

MIB = 1024 * 1024
CLEAN = Path(__file__).parents[1] / "tests" / "corpus" / "clean"


def typical() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(CLEAN.glob("*.md"))]
    rounds = 2000
    best = min(_time_all(texts, rounds) for _ in range(5))
    print(f"typical memory file (mean of {len(texts)})  {best / rounds / len(texts) * 1e6:.1f} us")
    code = "import time; t = time.perf_counter(); import memsync.privacy.scanner; "
    code += "print(time.perf_counter() - t)"
    runs = [float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(15)]
    print(f"import of the scanner (median of 15)  {sorted(runs)[7] * 1e3:.2f} ms")
    # what the hook pays in its fresh process: the import and the first scan, which compiles
    # the patterns whose needles the file holds
    code = "import sys, time; t = time.perf_counter(); from memsync.privacy.scanner import scan; "
    code += "scan(open(sys.argv[1], encoding='utf-8').read()); print(time.perf_counter() - t)"
    first = sorted(CLEAN.glob("*.md"))[0]
    runs = [
        float(subprocess.check_output([sys.executable, "-c", code, str(first)])) for _ in range(15)
    ]
    print(f"import + first scan, fresh process (median of 15)  {sorted(runs)[7] * 1e3:.2f} ms")


def _time_all(texts: list[str], rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            scan(text)
    return time.perf_counter() - start


def main() -> None:
    typical()
    if "--typical" in sys.argv:
        return
    rng = random.Random(1)
    cases = {
        "random 4-digit groups": " ".join(f"{rng.randint(0, 9999):04d}" for _ in range(MIB // 5)),
        "random 4-digit groups, '-'": "-".join(
            f"{rng.randint(0, 9999):04d}" for _ in range(MIB // 5)
        ),
        "'4 1' repeated": " ".join(["4 1"] * (MIB // 4)),
        "'5 4 1 2 3' repeated": " ".join(["5 4 1 2 3"] * (MIB // 10)),
    }
    for label, text in cases.items():
        best = min(_time(text) for _ in range(3))
        print(f"{label:28} {len(text) / MIB:.2f} MiB  {best:.2f} s")


def _time(text: str) -> float:
    start = time.perf_counter()
    scan(text)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
