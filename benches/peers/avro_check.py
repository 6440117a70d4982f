#!/usr/bin/env python3
"""Apache's Python `avro` compatibility checker, driven the way `covenant check` is.

    avro_check.py [--level LEVEL] NEW OLD...

OLD files are earlier versions, oldest first; a folder is read in file-name order. Non-transitive
levels compare NEW with the last version only, transitive ones with every version, in both
directions for FULL. Each pair gets a fresh ReaderWriterCompatibilityChecker (its memo is per
pair, as Covenant's is). Exit 0 compatible, 1 incompatible, 2 invalid input: the same contract
as `covenant check`, so the benchmark times the same work for both.
"""
import argparse
import os
import sys

from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType
import avro.schema

LEVELS = {
    "NONE": ((), False),
    "BACKWARD": (("backward",), False),
    "BACKWARD_TRANSITIVE": (("backward",), True),
    "FORWARD": (("forward",), False),
    "FORWARD_TRANSITIVE": (("forward",), True),
    "FULL": (("backward", "forward"), False),
    "FULL_TRANSITIVE": (("backward", "forward"), True),
}


def expand(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(os.path.join(p, n) for n in sorted(os.listdir(p)) if os.path.isfile(os.path.join(p, n)))
        else:
            out.append(p)
    return out


def parse(path):
    with open(path, encoding="utf-8") as f:
        return avro.schema.parse(f.read())


def compatible(reader, writer):
    result = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
    return result.compatibility is SchemaCompatibilityType.compatible


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--level", default="BACKWARD")
    ap.add_argument("new")
    ap.add_argument("old", nargs="+")
    args = ap.parse_args()
    level = args.level.upper().replace("-", "_")
    if level not in LEVELS:
        print(f"avro_check: invalid level {args.level}", file=sys.stderr)
        return 2
    directions, transitive = LEVELS[level]
    try:
        new = parse(args.new)
        history = [parse(p) for p in expand(args.old)]
    except Exception as e:  # any parse failure is invalid input, as for covenant check
        print(f"avro_check: {e}", file=sys.stderr)
        return 2
    if not history:
        print("avro_check: no earlier versions", file=sys.stderr)
        return 2
    in_scope = history if transitive else history[-1:]
    ok = True
    for old in reversed(in_scope):
        for d in directions:
            if d == "backward" and not compatible(new, old):
                ok = False
            if d == "forward" and not compatible(old, new):
                ok = False
    print("compatible" if ok else "INCOMPATIBLE")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
