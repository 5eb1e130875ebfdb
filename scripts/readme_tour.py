"""Run the README's API tour (every ```python block under '## API tour' up to the next '## '
heading) in one namespace, as a new user pasting it would: `python scripts/readme_tour.py`."""

from __future__ import annotations

import os
import re
import sys

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")


def tour_blocks(text: str) -> list[str]:
    section = text.split("\n## API tour", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def main() -> int:
    blocks = tour_blocks(open(README, encoding="utf-8").read())
    if not blocks:
        print("no python blocks under '## API tour'", file=sys.stderr)
        return 1
    namespace: dict = {"__name__": "__readme__"}
    for i, code in enumerate(blocks, 1):
        exec(compile(code, f"README.md API tour block {i}", "exec"), namespace)
    print(f"README API tour: {len(blocks)} blocks ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
