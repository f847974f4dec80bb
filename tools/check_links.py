#!/usr/bin/env python3
"""Checks that the repository refers only to files and sections that exist.

1. Markdown links and images, `[text](target)`, `![alt](target)`, `<img src=...>` and
   `<a href=...>`, in every Markdown file: the target file must exist (relative to the Markdown
   file), and a `#section` must be a heading of the target (GitHub's anchor rules) or an explicit
   `id=`/`name=` anchor. Web links (http, https, mailto) are not fetched.
2. Paths named in Markdown code spans (`docs/lj.md`, `strategies/par_part.hpp`, ...), with a
   file extension the repository uses: each must exist relative to the Markdown file, the
   repository root, `include/`, `include/cellint/` or `benchmarks/results/` (the generated
   benchmarks page names its data from there), unless it lies under an output directory
   (build*/, out/, $OUT) or is a placeholder (`<...>`, `*`).
3. Names of Markdown files (`*.md`) in comments of C++ and CUDA sources, CMake files, shell
   and Python scripts (and Python docstrings), resolved like (2).

Files are those git knows about (tracked, or untracked and not ignored); without git, every file
outside build*/, .git/ and .deps/.

Usage: tools/check_links.py [-v]     exit status 0: all found; 1: the missing ones are listed
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEARCH_DIRS = ["", "include", "include/cellint", "benchmarks/results"]
CODE_EXT = {".hpp", ".cpp", ".cu", ".hip", ".h", ".py", ".sh", ".cmake", ".txt", ".md", ".json", ".csv",
            ".png", ".svg", ".in"}
SOURCE_SUFFIX = {".hpp", ".cpp", ".cu", ".hip", ".h", ".py", ".sh", ".cmake", ".in"}
SOURCE_NAMES = {"CMakeLists.txt", "run", "Doxyfile"}
# Paths that name outputs (written by a build, a test or a benchmark run), not repository files.
OUTPUT_PREFIXES = ("build", "out/", "$", ".deps/", "/", "~")
# Names that stand for any file in usage texts.
PLACEHOLDERS = {"FILE.md", "NAME.md", "X.md"}

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"<(?:img|a)\b[^>]*?\b(?:src|href)\s*=\s*\"([^\"]+)\"", re.I)
HTML_ANCHOR = re.compile(r"<[^>]+\b(?:id|name)\s*=\s*\"([^\"]+)\"", re.I)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
PATH_IN_SPAN = re.compile(r"^[A-Za-z0-9_.][\w./+-]*\.([A-Za-z]+)$")
MD_NAME = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.md)\b")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def repo_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, check=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
        files = [f for f in files if not re.match(r"(build[^/]*|\.git|\.deps)/", f)]
    return sorted(f for f in files if (ROOT / f).is_file())


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)                  # inline HTML
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)   # links: keep the text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)                    # keeps letters, digits, _, -, space
    return text.replace(" ", "-")


def lines_outside_fences(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = False
    for no, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield no, line


_anchor_cache = {}


def anchors(path):
    if path not in _anchor_cache:
        found, seen = set(), {}
        text = path.read_text(errors="replace")
        for _, line in lines_outside_fences(text):
            m = HEADING.match(line)
            if m:
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
            found.update(HTML_ANCHOR.findall(line))
        _anchor_cache[path] = found
    return _anchor_cache[path]


def resolve(name, base):
    """The existing file or directory `name` refers to from directory `base`, or None."""
    for d in [base] + [ROOT / s for s in SEARCH_DIRS]:
        p = (d / name).resolve()
        if p.exists():
            return p
    return None


def check_markdown(rel, problems):
    path = ROOT / rel
    base = path.parent
    text = path.read_text(errors="replace")
    for no, line in lines_outside_fences(text):
        spans = [m.group(2) for m in CODE_SPAN.finditer(line)]
        prose = CODE_SPAN.sub("", line)
        for target in LINK.findall(prose) + HTML_LINK.findall(prose):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (base / file_part).resolve() if file_part else path
            if not dest.exists():
                problems.append(f"{rel}:{no}: link to a missing file: {target}")
                continue
            if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{rel}:{no}: link to a missing section: {target}")
        for span in spans:
            span = span.strip()
            m = PATH_IN_SPAN.match(span)
            if not m or "." + m.group(1).lower() not in CODE_EXT:
                continue
            if ("/" not in span and not span.endswith(".md")) or span.startswith(OUTPUT_PREFIXES):
                continue  # a bare file name (`ceilings.json`) may be anywhere; outputs are not in the tree
            if not resolve(span, base):
                problems.append(f"{rel}:{no}: names a file that does not exist: `{span}`")


def comments(path):
    """(line number, comment text) of a source file: what follows //, /*, a leading *, or # (in
    CMake, shell and Python), and the lines of Python docstrings. Strings in code are skipped."""
    hash_comments = path.suffix in {".py", ".sh", ".cmake", ".in"} or path.name in SOURCE_NAMES
    in_doc = False
    for no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if path.suffix == ".py":
            quotes = line.count('"""') + line.count("'''")
            if in_doc or quotes:
                yield no, line
                if quotes % 2:
                    in_doc = not in_doc
                continue
        m = re.search(r"(//|/\*|^\s*\*)(.*)", line)
        if m:
            yield no, m.group(2)
        elif hash_comments and "#" in line:
            yield no, line[line.index("#") + 1:]


def check_source(rel, problems):
    path = ROOT / rel
    for no, text in comments(path):
        for name in MD_NAME.findall(text):
            if name.startswith(OUTPUT_PREFIXES) or name in PLACEHOLDERS:
                continue
            if not resolve(name, path.parent):
                problems.append(f"{rel}:{no}: mentions {name}, which does not exist")


def main(argv):
    verbose = "-v" in argv
    problems = []
    files = repo_files()
    md = [f for f in files if f.endswith(".md")]
    src = [f for f in files if pathlib.Path(f).suffix in SOURCE_SUFFIX or pathlib.Path(f).name in SOURCE_NAMES]
    for f in md:
        check_markdown(f, problems)
    for f in src:
        check_source(f, problems)
    for p in problems:
        print(p)
    if problems:
        print(f"check_links: {len(problems)} reference(s) to missing files or sections", file=sys.stderr)
        return 1
    if verbose:
        print(f"check_links: {len(md)} Markdown files and {len(src)} sources checked, every reference found")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
