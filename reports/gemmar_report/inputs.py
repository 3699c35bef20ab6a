"""Loads the report document that `gemmar report` wrote (format "gemmar-report/1", docs/report.md).

Nothing is re-parsed or re-derived here: the C++ side has read every results file, skipped bad records,
aggregated the runs per config and shape, and matched model documents to configs.
"""
import json

FORMAT = "gemmar-report/1"
REQUIRED = ("inputs", "summary", "groups", "configs", "runs", "models", "sweeps", "skipped", "notes", "phase_order",
            "placements")


class BadDocument(Exception):
    """The file is not a gemmar report document."""


def load(path):
    try:
        with open(path, "r", encoding="utf-8") as fh:
            doc = json.load(fh)  # NaN / Infinity tokens are read as floats
    except OSError as e:
        raise BadDocument(f"{path}: cannot be read: {e.strerror}")
    except ValueError as e:
        raise BadDocument(f"{path}: not JSON: {e}")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BadDocument(f"{path}: not a gemmar report document (expected \"format\": \"{FORMAT}\"; "
                          f"give gemmar report the results files instead)")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise BadDocument(f"{path}: field '{missing[0]}' is missing")
    return doc


def group_label(g, with_shape=True):
    s = g["config"]
    if with_shape:
        s += f" M={g['shape']['m']}"
    return s
