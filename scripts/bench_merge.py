"""How long one structured merge takes when many entries changed at once: the reword search
(merge/resemblance.py) compares removed and added entries by their words.

    PYTHONPATH=. python scripts/bench_merge.py

Prints the best of 5 runs per shape; docs/benchmarks.md has the numbers."""

from __future__ import annotations

import time

from memsync.memory.merge import merge

HEAD = "---\nname: v\ndescription: d\ntype: voice_calibration\n---\n\n## Rules learned\n"


def main() -> None:
    for n, every in ((100, 1), (1000, 50), (1000, 1)):
        items = [f"- entry number {i} about topic {i * 7} and more words here" for i in range(n)]
        base = (HEAD + "\n".join(items) + "\n").encode()
        ours = [x + " (o)" if i % every == 0 else x for i, x in enumerate(items)]
        theirs = [x + " (t)" if i % 2 else x for i, x in enumerate(items)]
        o, t = ((HEAD + "\n".join(v) + "\n").encode() for v in (ours, theirs))
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            merge("voice_calibration.md", base, o, t)
            runs.append(time.perf_counter() - start)
        print(f"{n} entries, one side rewords every {every}, the other every 2nd: "
              f"{min(runs) * 1000:.0f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
