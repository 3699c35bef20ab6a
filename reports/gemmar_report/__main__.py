"""python3 -I -B -m gemmar_report REPORT.json --out DIR (with reports/ on sys.path), or reports/run_report.py."""
import argparse
import json
import os
import sys

from . import EXIT_BAD_INPUT, EXIT_ENVIRONMENT
from .inputs import BadDocument, load


def main(argv):
    ap = argparse.ArgumentParser(prog="gemmar_report",
                                 description="draw a gemmar report document (DIR/report.json) into DIR")
    ap.add_argument("document", help="the normalised report document written by `gemmar report`")
    ap.add_argument("--out", required=True, help="directory to write index.html, runs.html, PNGs, manifest.json")
    args = ap.parse_args(argv)
    try:
        doc = load(args.document)
    except BadDocument as e:
        sys.stderr.write(f"gemmar report: {e}\n")
        return EXIT_BAD_INPUT
    try:
        from . import figures
        figures.setup_matplotlib()
    except ImportError as e:
        sys.stderr.write(f"gemmar report: {sys.executable} cannot import {e.name or 'matplotlib'} (install "
                         f"python3-matplotlib, or point GEMMAR_PYTHON at an interpreter that has it)\n")
        return EXIT_ENVIRONMENT
    from . import page
    os.makedirs(args.out, exist_ok=True)
    drawn, not_drawn, notes = figures.draw_all(doc, args.out)
    page.write_pages(doc, args.out, drawn, not_drawn, notes)
    manifest = {
        "figures": [name for name, _ in drawn],
        "skipped": [{"figure": n, "reason": r} for n, r in not_drawn],
        "notes": notes,
        "pages": ["index.html", "runs.html", "phases.html"],
        "timelines": {"dir": "timeline", "files": len(doc["runs"])},  # timeline/run-<i>.json, one per run
        "inputs": doc["inputs"],
        "runs": doc["summary"]["runs"],
        "groups": doc["summary"]["groups"],
        "fail": doc["summary"]["fail"],
        "skipped_records": doc["summary"]["skipped"],
    }
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
