#!/usr/bin/python3
"""Every repo path named in a comment of a tracked source must exist.

Usage: check_comment_paths.py [ROOT]   (ROOT: the repository, default this script's parent's parent)

Reads the comments of the C++/CUDA, Python, CMake and shell sources under ROOT (the files `git ls-files` lists,
or every file when ROOT is no git checkout), takes each word that starts with a top-level entry of ROOT followed by
a slash (`validate/cli/cli.hpp`, `docs/model.md`, `tests/data/`), and prints `FILE:LINE: PATH` for each one that
names nothing under ROOT. A `*` in a path is a glob that must match something; `a.{hpp,cpp}` names both files.
Exit 0 when every path exists, 1 otherwise, 2 on bad usage.

docs/results/ is not read: a record's scripts are kept as they ran, naming the paths of their day.
Paths of another repository are skipped where they share a first component with ours: mori's python/mori/ and
tests/python/ (gemmar's tests/ has no python/), cited in comments with mori's commit.
"""
import glob
import io
import os
import re
import subprocess
import sys
import tokenize

SOURCE_EXT = {".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".py", ".sh", ".cmake"}
SKIP_PREFIXES = ("docs/results/",)
# Another repository's paths that share a first component with ours: mori's Python package and its tests.
FOREIGN_PREFIXES = ("python/mori/", "tests/python/")
WORD = re.compile(r"(?<![\w./\-$<])\.?[A-Za-z0-9_][A-Za-z0-9_.\-]*/[A-Za-z0-9_.*/{},\-]*")


def git_top(root):
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                             check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return out


def tracked_files(root):
    top = git_top(root)
    if top and os.path.realpath(top) == os.path.realpath(root):
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
        files = out.splitlines()
    else:  # no checkout of its own (a source tarball, a test's scratch tree): every file
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if os.path.isfile(os.path.join(root, f)))


def language(root, rel):
    name = os.path.basename(rel)
    ext = os.path.splitext(name)[1]
    if name == "CMakeLists.txt" or ext == ".cmake":
        return "hash"
    if ext == ".py":
        return "python"
    if ext in SOURCE_EXT:
        return "c" if ext not in (".sh",) else "hash"
    if ext == "":
        try:
            with open(os.path.join(root, rel), "rb") as f:
                first = f.readline()
        except OSError:
            return None
        if first.startswith(b"#!") and (b"sh" in first):
            return "hash"
        if first.startswith(b"#!") and b"python" in first:
            return "python"
    return None


def c_comments(text):
    """(line, text) of every // and /* */ comment, skipping string and character literals."""
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield line, text[i + 2:j]
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                yield line + k, part
            line += text.count("\n", i, j)
            i = j + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end
            line += text.count("\n", i, end)
            i = end + len(m.group(1)) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1


def hash_comments(text):
    """(line, text) of every # comment of a shell or CMake file (not the #! line), outside quotes."""
    for number, raw in enumerate(text.split("\n"), 1):
        if number == 1 and raw.startswith("#!"):
            continue
        quote = None
        for k, c in enumerate(raw):
            if quote:
                if c == quote:
                    quote = None
                elif c == "\\" and quote == '"':
                    continue
            elif c in "\"'":
                quote = c
            elif c == "#" and (k == 0 or raw[k - 1] in " \t;(") and not raw[k:].startswith("#{"):
                yield number, raw[k + 1:]
                break


def python_comments(text):
    """(line, text) of every # comment and every docstring (a string that is a statement of its own)."""
    prev = tokenize.NEWLINE
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string[1:]
            elif tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                                          tokenize.NL):
                for k, part in enumerate(tok.string.split("\n")):
                    yield tok.start[0] + k, part
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                prev = tok.type
    except (tokenize.TokenError, SyntaxError):
        return


def expand_braces(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(word[:m.start()] + alt + word[m.end():])
    return out


# Upper-case words that stand for a name in a path (`model/profiles/NAME.json`); README.md and the like are names.
PLACEHOLDERS = ("NAME", "FILE", "DIR", "PATH", "OUT", "OUTDIR", "PREFIX", "TAG")


def placeholders_as_globs(path):
    """`model/profiles/NAME.json` -> `model/profiles/*.json`."""
    alt = "|".join(PLACEHOLDERS)
    return "/".join(re.sub(r"^(?:%s)(?=\.\w+$|$)" % alt, "*", part) for part in path.split("/"))


def exists(root, word):
    """Whether every path the word names exists: a glob matches, a stem names a file with an extension
    (`reference/floors` for floors.{hpp,cpp}), a placeholder component (PLACEHOLDERS) matches some name."""
    for path in expand_braces(word):
        full = os.path.join(root, path)
        if os.path.exists(full) or glob.glob(glob.escape(full) + ".*"):
            continue
        pattern = placeholders_as_globs(path)
        if ("*" in pattern and glob.glob(os.path.join(root, pattern))) or glob.glob(os.path.join(root, pattern) + ".*"):
            continue
        return False
    return True


def paths_in(comment, tops):
    for m in WORD.finditer(comment):
        word = m.group(0).rstrip(".,:;")
        first = word.split("/", 1)[0]
        if first not in tops or word.startswith(FOREIGN_PREFIXES):
            continue
        if "{" in word and "}" not in word:
            word = word[:word.index("{")]
        yield word


def check(root):
    files = tracked_files(root)
    tops = {f.split("/", 1)[0] for f in files if "/" in f}
    stale = []
    readers = {"c": c_comments, "hash": hash_comments, "python": python_comments}
    for rel in files:
        if rel.startswith(SKIP_PREFIXES):
            continue
        lang = language(root, rel)
        if lang is None:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for number, comment in readers[lang](text):
            for word in paths_in(comment, tops):
                if not exists(root, word):
                    stale.append("%s:%d: %s" % (rel, number, word))
    return stale


def cli(argv, name, check_root, default_root):
    """The command line both checkers share: [ROOT], each finding printed, exit 1 on any, 2 on bad usage."""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print("usage: %s [ROOT]" % name, file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else default_root
    if not os.path.isdir(root):
        print("%s: %s: no such directory" % (name, root), file=sys.stderr)
        return 2
    found = check_root(root)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(cli(sys.argv, "check_comment_paths.py", check,
                 os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
