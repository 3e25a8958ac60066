#!/usr/bin/env python3
"""Every relative link and #anchor in README.md and docs/*.md resolves (no network).

Anchors follow GitHub's rule: the heading lowercased, punctuation other than `-` and `_`
dropped, spaces turned into `-`, and a `-N` suffix for the Nth repeat of the same heading.
Usage: scripts/check_links.py [FILE...]   (default: README.md and docs/*.md)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def strip_code(text):
    text = re.sub(r"^ {0,3}```.*?^ {0,3}```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path):
    seen, out = {}, set()
    in_fence = False
    for line in path.read_text().splitlines():
        if re.match(r" {0,3}```", line):
            in_fence = not in_fence
            continue
        m = None if in_fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower().replace("`", "")).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def main(files):
    bad = 0
    for f in files:
        f = pathlib.Path(f).resolve()
        for m in LINK.finditer(strip_code(f.read_text())):
            target = m.group(1) or m.group(2)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # http:, https:, mailto: are not checked (no network)
            path, _, anchor = target.partition("#")
            dest = (f.parent / path).resolve() if path else f
            if not dest.exists():
                print(f"{f.relative_to(ROOT)}: {target}: no such file")
                bad = 1
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                print(f"{f.relative_to(ROOT)}: {target}: no such anchor")
                bad = 1
    return bad


if __name__ == "__main__":
    args = sys.argv[1:] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    sys.exit(main(args))
