"""What a memory tool `view` shows: a numbered file or a folder listing, within one view's
budget of characters. Every cut says so and how to get the rest: a file with `view_range`
[N, last], a listing with `view_range` over its entries, a line longer than a view in parts
(view [N, N] again for the next part). Line numbers and sizes look as the SDK's own backend
shows them.
"""

from __future__ import annotations

from memsync.claude.tool_checks import ROOT, MemoryToolError

LINE_NUMBER_WIDTH = 6  # the SDK's own backend numbers lines this wide
VIEW_MAX_CHARS = 16_000  # one view's output: about 4,000 tokens of the model's context
LIST_DEPTH = 2  # a directory view lists two levels, as the tool documentation shows


class Pages:
    """Views cut to `view_max_chars`; remembers which part of a long line was shown last."""

    def __init__(self, view_max_chars: int = VIEW_MAX_CHARS) -> None:
        self.view_max_chars = view_max_chars
        self._line_cursor: tuple[object, int] = (None, 0)  # the long line a view is paging

    def listing(
        self, path: str, entries: list[tuple[str, int]], view_range: list[int] | None = None
    ) -> str:
        """A directory listing; `view_range` [first, last] pages through its entries (1-based,
        last -1: the end), which is what the notice of a cut listing tells the model to use."""
        shown = path.rstrip("/") or ROOT
        header = (
            f"Here're the files and directories up to {LIST_DEPTH} levels deep in {shown}, "
            "excluding hidden items:"
        )
        total = sum(size for _, size in entries if not _.endswith("/"))
        lines = [header, f"{_size(total)}\t{shown}"]
        first, last = 1, len(entries)
        if view_range is not None and entries:
            first, last = _check_range(path, view_range, len(entries), unit="entries")
            lines[0] = header[:-1] + f" (entries {first}-{last} of {len(entries)}):"
        used = sum(len(x) + 1 for x in lines)
        for number in range(first, last + 1):
            rel, size = entries[number - 1]
            line = f"{_size(size)}\t{shown}/{rel}"
            if used + len(line) + 1 > self.view_max_chars - 200:
                lines.append(
                    f"[listing cut: entries {first}-{number - 1} of {len(entries)} shown; view "
                    f"{shown} with view_range [{number}, {last}] for the rest]"
                )
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)

    def numbered(
        self, path: str, text: str, view_range: list[int] | None, header: bool = True
    ) -> str:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        first, last = 1, len(lines)
        if view_range is not None:
            first, last = _check_range(path, view_range, len(lines))
        out = [f"Here's the content of {path} with line numbers:"] if header else []
        used = sum(len(x) + 1 for x in out)
        budget = self.view_max_chars - 300  # room for the notice
        for number in range(first, last + 1):
            line = f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{lines[number - 1]}"
            if used + len(line) + 1 > budget and number > first:
                out.append(
                    f"[output cut at {self.view_max_chars} characters: lines {first}-{number - 1} "
                    f"of {len(lines)} shown; view with view_range [{number}, {last}] for the "
                    "rest]"
                )
                break
            if len(line) > budget:  # one line longer than a view: shown in parts
                out.extend(self._line_part(path, text, number, lines[number - 1], budget - used))
                if number < last:
                    out.append(
                        f"[lines {number + 1}-{last} not shown: view with view_range "
                        f"[{number + 1}, {last}] for them]"
                    )
                break
            out.append(line)
            used += len(line) + 1
        return "\n".join(out)

    def _line_part(self, path: str, text: str, number: int, line: str, room: int) -> list[str]:
        """The next part of a line too long for one view: the first view of [N, N] shows its
        start, each further view of the same line (unchanged) the part after, and every part
        says which characters it holds and how to get the rest."""
        key = (path, number, hash(text))
        start = self._line_cursor[1] if self._line_cursor[0] == key else 0
        room = max(room - LINE_NUMBER_WIDTH - 1, 1000)
        end = min(start + room, len(line))
        part = f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line[start:end]}"
        if end < len(line):
            self._line_cursor = (key, end)
            notice = (
                f"[line {number} is {len(line):,} characters, more than one view shows: "
                f"characters {start + 1:,}-{end:,} shown; view {path} with view_range "
                f"[{number}, {number}] again for the next part]"
            )
        else:
            self._line_cursor = (None, 0)
            notice = (
                f"[line {number}: characters {start + 1:,}-{end:,} of {len(line):,} shown, "
                "the end of the line]"
                if start
                else ""
            )
        return [part, notice] if notice else [part]


def _size(size: int) -> str:
    """Sizes as the SDK's own backend shows them: 0B, 512B, 1.5K, 2M."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def _check_range(
    path: str, view_range: list[int], count: int, unit: str = "lines"
) -> tuple[int, int]:
    if (
        not isinstance(view_range, (list, tuple))
        or len(view_range) != 2
        or not all(isinstance(x, int) for x in view_range)
    ):
        raise MemoryToolError("view_range must be two line numbers, [first, last] (last -1: end).")
    first, last = view_range
    last = count if last == -1 else min(last, count)  # past the end: up to the end
    if first < 1 or first > max(count, 1) or last < first:
        raise MemoryToolError(
            f"view_range {list(view_range)} is outside {path}, which has {count} {unit}: use "
            f"[first, last] with 1 <= first <= last <= {count} (or last = -1)."
        )
    return first, last


def snippet(text: str, line_index: int) -> str:
    lines = text.split("\n")
    start, end = max(0, line_index - 2), min(len(lines), line_index + 3)
    return "\n".join(
        f"{str(n + 1).rjust(LINE_NUMBER_WIDTH)}\t{lines[n]}" for n in range(start, end)
    )
