"""gemmar report: draws the figures and pages of one normalised report document.

`gemmar report` (validate/cli/cmd_report.cpp) reads every results file, normalises it in C++
(validate/cli/report_inputs.cpp) and writes one JSON document, `DIR/report.json` (format "gemmar-report/1",
described in docs/report.md). This package only draws it:

    inputs   loads and checks the document
    figures  the PNG figures (matplotlib, Agg), each of a bounded size
    page     index.html (aggregated per config) and runs.html (every run, every skipped record)

stdlib + numpy + matplotlib only. Exit codes, apart from Python's own (1: uncaught exception, 2: argparse):
10 = the document is not a gemmar report document, 11 = matplotlib or numpy cannot be imported.
"""

EXIT_BAD_INPUT = 10
EXIT_ENVIRONMENT = 11
