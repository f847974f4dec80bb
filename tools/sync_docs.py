#!/usr/bin/env python3
"""Copies code regions from compiled sources into Markdown files, so that docs never hold
pasted code. A region in a Markdown file

    <!-- snippet: examples/custom_functor/custom_functor.cpp readme-example -->
    ```cpp
    ...
    ```
    <!-- /snippet -->

is replaced by the lines between the two `// [readme-example]` markers of that source.
Usage: tools/sync_docs.py [--check] FILE.md ...   (--check: exit 1 if a file is out of date)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PATTERN = re.compile(r"(<!-- snippet: (\S+) (\S+) -->\n)(.*?)(<!-- /snippet -->)", re.S)


def region(path, marker):
    lines = (ROOT / path).read_text().splitlines()
    tag = f"// [{marker}]"
    idx = [i for i, l in enumerate(lines) if l.strip() == tag]
    if len(idx) != 2:
        sys.exit(f"{path}: expected two '{tag}' markers, found {len(idx)}")
    body = lines[idx[0] + 1 : idx[1]]
    indent = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
    return "\n".join(l[indent:] for l in body)


def main(argv):
    check = "--check" in argv
    files = [a for a in argv if a != "--check"]
    stale = []
    for f in files:
        p = ROOT / f
        text = p.read_text()
        new = PATTERN.sub(
            lambda m: f"{m.group(1)}```cpp\n{region(m.group(2), m.group(3))}\n```\n{m.group(5)}", text
        )
        if new != text:
            stale.append(f)
            if not check:
                p.write_text(new)
    if check and stale:
        sys.exit("out of date (run tools/sync_docs.py): " + ", ".join(stale))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
