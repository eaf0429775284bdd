"""How long the secret scanner takes on a megabyte of digit groups (the worst case for the
card search: every group may start a card number). Usage: python scripts/bench_scanner.py"""

from __future__ import annotations

import random
import time

from memsync.privacy.scanner import scan

MIB = 1024 * 1024


def main() -> None:
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
