#!/usr/bin/python3
"""Runner for the gemmar_report package: `python3 -I -B reports/run_report.py REPORT.json --out DIR`.

`gemmar report` starts this file with -I (isolated: no PYTHON* variables, no user site-packages, and no
script directory on sys.path), so it puts its own directory on sys.path and runs the package's main.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gemmar_report.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
