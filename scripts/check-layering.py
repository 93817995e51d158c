#!/usr/bin/env python3
"""Checks that no library under src/ includes a header of a library it may not
depend on. The table below is docs' parts table (../shared/DESIGN.md "Parts"):
each library's direct dependencies; a library may include its own headers and
those of everything its dependencies reach. Run by CTest (tests/layering).

    check-layering.py SOURCE_DIR      exit 0 when clean, 1 with one line per violation
"""
import pathlib
import re
import sys

# Direct dependencies, lowest layer first:
# support < ptx < toolchain < tasks < exec < emu < verify < llm/prompt < store < report < solve < eval;
# serve (the gate as a service) sits on prompt and verify.
# Where the design is stricter than the order (exec sits on toolchain, not tasks;
# store needs only support), the design wins.
DEPENDS = {
    "support": [],
    "ptx": ["support"],
    "toolchain": ["ptx"],
    "tasks": ["toolchain"],
    "exec": ["toolchain"],
    "emu": ["exec", "ptx"],
    "verify": ["tasks", "exec", "emu"],
    "llm": ["verify"],  # verify's types for feedback
    "prompt": ["llm", "verify"],
    "store": ["support"],
    "report": ["store", "verify"],
    "solve": ["llm", "prompt", "verify", "store"],
    "eval": ["solve", "report"],
    "serve": ["prompt", "verify"],
    "corpus": ["tasks"],  # NVRTC through tasks, the PTX compiler through toolchain; the gate is the CLI's
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([A-Za-z0-9_]+)/')


def allowed(library):
    """The library itself and everything its dependencies reach."""
    seen, stack = {library}, list(DEPENDS[library])
    while stack:
        dependency = stack.pop()
        if dependency not in seen:
            seen.add(dependency)
            stack.extend(DEPENDS[dependency])
    return seen


def main(argv):
    source = pathlib.Path(argv[1] if len(argv) > 1 else ".").resolve() / "src"
    problems = []
    for folder in sorted(p for p in source.iterdir() if p.is_dir()):
        library = folder.name
        if library not in DEPENDS:
            problems.append(f"src/{library}: a library missing from the layering table in {argv[0]}")
            continue
        may = allowed(library)
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".h", ".hpp", ".cpp", ".cc", ".inc"):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if match and match.group(1) in DEPENDS and match.group(1) not in may:
                    problems.append(f"{path.relative_to(source.parent)}:{number}: {library} includes "
                                    f"{match.group(1)}/, which it may not depend on (allowed: "
                                    f"{', '.join(sorted(may - {library})) or 'nothing'})")
    for problem in problems:
        print(problem)
    if not problems:
        print(f"layering: {sum(1 for _ in source.iterdir())} libraries, every include within its allowed layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
