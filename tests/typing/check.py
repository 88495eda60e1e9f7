"""`mypy --strict` on a user's program against the installed gradcy, and proof that it sees
gradcy's types: user_program.py must type-check clean, and every line of bad_program.py marked
``# E: text`` must get an error holding ``text`` (no other line an error). A gradcy mypy cannot
find, or finds untyped, fails the first (import-not-found, no py.typed: untyped calls); types
lost to Any fail the second.

    python tests/typing/check.py

Run by .ci/lint (the editable install) and .ci/package (the wheel). mypy runs from a scratch
directory with no configuration file (a user's defaults plus --strict), so the gradcy it
checks against is the installed one, not the source tree; its cache is kept in
build/mypy-cache/user (or $GRADCY_MYPY_CACHE) to make runs after the first fast.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
GOOD, BAD = HERE / "user_program.py", HERE / "bad_program.py"
ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<msg>.*)$")
MARK = re.compile(r"\S  # E: (?P<text>.*)$")  # (after code, two spaces)


def expected(path):
    """{line: text} of the ``# E: text`` marks of a file."""
    marks = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = MARK.search(line)
        if m:
            marks[i] = m.group("text").strip()
    return marks


def main():
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    cache = os.environ.get(
        "GRADCY_MYPY_CACHE", str(HERE.parents[1] / "build" / "mypy-cache" / "user")
    )
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--config-file=",
        "--no-error-summary",
        "--show-absolute-path",
        "--cache-dir",
        cache,
        str(GOOD),
        str(BAD),
    ]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        run = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True)
    took = time.perf_counter() - start
    if run.returncode not in (0, 1) or run.stderr.strip():
        sys.exit(f"typing: mypy failed to run ({run.returncode}):\n{run.stderr}{run.stdout}")
    errors = {}
    for line in run.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            errors.setdefault((m.group("path"), int(m.group("line"))), []).append(m.group("msg"))
    problems = [
        f"{path}:{line}: {msg}"
        for (path, line), msgs in sorted(errors.items())
        for msg in msgs
        if path == str(GOOD)
    ]
    for line, text in expected(BAD).items():
        msgs = errors.pop((str(BAD), line), [])
        if not any(text in msg for msg in msgs):
            problems.append(f"{BAD}:{line}: expected an error holding {text!r}, got {msgs}")
    problems += [
        f"{path}:{line}: unexpected error: {msg}"
        for (path, line), msgs in sorted(errors.items())
        if path == str(BAD)
        for msg in msgs
    ]
    if problems:
        sys.exit(
            "typing: mypy --strict on tests/typing/ did not give what it must:\n  "
            + "\n  ".join(problems)
            + f"\n(command: {' '.join(cmd)})"
        )
    print(
        f"typing: mypy --strict: {GOOD.name} clean, {len(expected(BAD))} errors of "
        f"{BAD.name} found ({took:.1f} s)"
    )


if __name__ == "__main__":
    main()
