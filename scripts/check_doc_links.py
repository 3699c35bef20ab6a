#!/usr/bin/python3
"""Every link and every repo path in README.md and docs/*.md resolves.

Usage: check_doc_links.py [ROOT]   (ROOT: the repository, default this script's parent's parent)

For README.md and each docs/*.md under ROOT: every Markdown link or image whose target is no URL must name a file
or directory that exists (relative to the page), and a `#anchor` must be a heading of the page it points into
(GitHub's slugs); every word that names a repo path (`validate/cli/cli.hpp`, `docs/results/...`: a top-level
entry of ROOT, a slash, the rest) must exist, as scripts/check_comment_paths.py requires of source comments.
Prints `FILE:LINE: what` for each one that does not; exit 0 when none, 1 otherwise, 2 on bad usage.
The records under docs/results/ are not read: they keep the paths of their day.
"""
import glob
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("check_comment_paths", os.path.join(HERE, "check_comment_paths.py"))
paths = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paths)

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")


def slug(heading):
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    out, seen, fence = set(), {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def pages(root):
    out = [os.path.join(root, "README.md")] if os.path.exists(os.path.join(root, "README.md")) else []
    return out + sorted(glob.glob(os.path.join(root, "docs", "*.md")))


def strip_urls(line):
    return re.sub(r"[a-zA-Z][a-zA-Z0-9+.\-]*://\S+", " ", line)


def check(root):
    tops = {e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e)) and not e.startswith("build") and e != "out"}  # out/: bootstrap.sh's output, not the repo
    bad = []
    for page in pages(root):
        rel = os.path.relpath(page, root)
        with open(page, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for number, line in enumerate(lines, 1):
            for m in LINK.finditer(line):
                target = m.group(1)
                if URL.match(target):
                    continue
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                if not os.path.exists(dest):
                    bad.append("%s:%d: link %s: no such file" % (rel, number, target))
                elif frag and dest.endswith(".md") and os.path.isfile(dest) and frag not in anchors(dest):
                    bad.append("%s:%d: link %s: no heading with that anchor" % (rel, number, target))
            for word in paths.paths_in(strip_urls(LINK.sub(" ", line)), tops):
                if not paths.exists(root, word):
                    bad.append("%s:%d: path %s: no such file" % (rel, number, word))
    return bad


if __name__ == "__main__":
    sys.exit(paths.cli(sys.argv, "check_doc_links.py", check, os.path.dirname(HERE)))
