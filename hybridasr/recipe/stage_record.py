"""What a recipe stage was made from, and whether it finished.

A stage's record is a small JSON file beside its outputs (e.g. ``data/stage1.json``): the
options that matter (``name=value``), the input files with their sizes and modification times
(a directory: every file under it), and ``complete``. ``begin`` compares the record with the
options and inputs of this run and says what to do:

- ``done``: the stage finished with these same options and inputs: nothing to redo;
- ``new``: no record (never run, or made before records existed);
- ``partial``: it started with these options and inputs and never finished (killed midway):
  its outputs are not to be trusted, only what resumes by itself (a training's state);
- ``changed``: it was made from other options or inputs (each difference is logged).

Unless ``done``, ``begin`` writes the new record with ``complete: false`` before the stage
does anything; ``finish`` sets ``complete: true`` once every output is written, as the last
thing the stage does. Both writes are atomic (a rename), so a stage killed at any point leaves
either the old record, the started one, or the finished one, never half a file.

``notes`` are recorded but not compared: options a stage applies by itself on a rerun (a
resumed training takes the new schedule options).
"""
from __future__ import annotations

import json
import logging
import os
import time
from typing import Dict, List, Optional, Sequence, Tuple

from hybridasr.errors import FormatError
from hybridasr.utils.atomic import atomic_open

log = logging.getLogger(__name__)

DONE, NEW, PARTIAL, CHANGED = "done", "new", "partial", "changed"


def describe_inputs(paths: Sequence[str]) -> Dict[str, dict]:
    """``{path: {"size", "mtime"}}`` of each file (links followed); a directory gives each
    file under it; a missing path ``{"missing": true}``. A file is named by where it really
    is (relative to the working dir when inside it): the same file through a linked exp dir
    (``exp/blstm_scr -> blstm``) is the same input."""
    out: Dict[str, dict] = {}
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path, followlinks=True):
                dirs.sort()
                for name in sorted(files):
                    f = os.path.join(root, name)
                    out[_name(f)] = _stat(f)
        else:
            out[_name(path)] = _stat(path)
    return out


def _name(path: str) -> str:
    real, here = os.path.realpath(path), os.path.realpath(os.getcwd())
    return os.path.relpath(real, here) if real.startswith(here + os.sep) else real


def _stat(path: str) -> dict:
    try:
        st = os.stat(path)
    except OSError:
        return {"missing": True}
    return {"size": st.st_size, "mtime": st.st_mtime_ns / 1e9}


def make_record(stage: str, options: Dict[str, str], inputs: Sequence[str],
                notes: Optional[Dict[str, str]] = None) -> dict:
    return {"stage": stage, "options": dict(options), "inputs": describe_inputs(inputs),
            "notes": dict(notes or {}), "complete": False,
            "started": time.strftime("%Y-%m-%d %H:%M:%S")}


def read_record(path: str) -> Optional[dict]:
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        raise FormatError(f"{path}: not a stage record ({e}); remove it to redo the stage")
    if not isinstance(rec, dict) or not {"options", "inputs", "complete"} <= set(rec):
        raise FormatError(f"{path}: not a stage record (no options, inputs and complete); "
                          f"remove it to redo the stage")
    return rec


def write_record(path: str, rec: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_open(path, "w", encoding="utf-8") as f:
        json.dump(rec, f, indent=1, sort_keys=True)
        f.write("\n")


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _file_change(before: dict, now: dict) -> str:
    if before.get("missing") or now.get("missing"):
        return "absent before" if before.get("missing") else "absent now"
    parts = []
    if before.get("size") != now.get("size"):
        parts.append(f"size {before.get('size')} -> {now.get('size')}")
    if before.get("mtime") != now.get("mtime"):
        parts.append(f"modified {_when(before.get('mtime', 0))} -> {_when(now.get('mtime', 0))}")
    return ", ".join(parts)


def differences(old: dict, new: dict) -> List[str]:
    """What differs between two records' options and inputs, one line each."""
    out = []
    oo, no = old.get("options", {}), new.get("options", {})
    for k in sorted(set(oo) | set(no)):
        if oo.get(k) != no.get(k):
            out.append(f"option {k}: before '{oo.get(k, '(none)')}', now '{no.get(k, '(none)')}'")
    oi, ni = old.get("inputs", {}), new.get("inputs", {})
    for f in sorted(set(oi) | set(ni)):
        if f not in oi:
            out.append(f"input {f}: new")
        elif f not in ni:
            out.append(f"input {f}: no longer an input")
        elif oi[f] != ni[f]:
            out.append(f"input {f}: {_file_change(oi[f], ni[f])}")
    return out


def begin(path: str, stage: str, options: Dict[str, str], inputs: Sequence[str],
          notes: Optional[Dict[str, str]] = None) -> Tuple[str, List[str]]:
    """The stage's status (``done``, ``new``, ``partial``, ``changed``) and why; unless done,
    the started record is written."""
    new = make_record(stage, options, inputs, notes)
    old = read_record(path)
    if old is None:
        status, why = NEW, [f"{path}: no record: the stage runs"]
    else:
        diffs = differences(old, new)
        if diffs:
            status = CHANGED
            why = [f"{path}: the stage was made from other options or inputs: it runs again"]
            why += ["  " + d for d in diffs]
        elif old["complete"]:
            return DONE, [f"{path}: done with these options and inputs"]
        else:
            status = PARTIAL
            why = [f"{path}: the stage started at {old.get('started')} and never finished "
                   f"(killed?): it runs again"]
    write_record(path, new)
    return status, why


def finish(path: str) -> None:
    """Marks the started record complete (atomically; the stage's last write)."""
    rec = read_record(path)
    if rec is None:
        raise FormatError(f"{path}: no stage record to finish (the stage did not begin)")
    rec["complete"] = True
    rec["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    write_record(path, rec)


def parse_items(items: Sequence[str]) -> Tuple[Dict[str, str], List[str]]:
    """``name=value`` words (a name of letters, digits, ``_``, ``-``) are options, the other
    words input paths (write a path holding ``=`` with a ``/``: ``./a=b``)."""
    options: Dict[str, str] = {}
    inputs: List[str] = []
    for item in items:
        name, eq, value = item.partition("=")
        if eq and name and name.replace("_", "").replace("-", "").isalnum():
            options[name] = value
        else:
            inputs.append(item)
    return options, inputs
