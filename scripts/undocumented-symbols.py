#!/usr/bin/env python3
"""Lists the public symbols of a module that are declared in this repository without a
documentation comment, from the symbol graphs `swift package generate-documentation` extracts.

    scripts/undocumented-symbols.py DIRECTORY   # exit 1 when any symbol is undocumented

Symbols without a source location in this repository (synthesized conformances, members
inherited from GRDB or the standard library) are not ours to document and are skipped, and so
are enum cases and members whose documentation is inherited from the protocol they implement.
"""
import json, os, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
missing = []
for name in sorted(os.listdir(sys.argv[1])):
    if not name.endswith(".symbols.json"):
        continue
    graph = json.load(open(os.path.join(sys.argv[1], name)))
    for symbol in graph["symbols"]:
        location = symbol.get("location", {}).get("uri", "")
        if root not in location or "/.build/" in location or symbol.get("accessLevel") not in ("public", "open"):
            continue
        if symbol.get("docComment") or symbol["kind"]["identifier"] in ("swift.enum.case",):
            continue
        path = location.split(root + "/", 1)[1]
        line = symbol["location"]["position"]["line"] + 1
        missing.append(f"{path}:{line}: {'.'.join(symbol['pathComponents'])}")
for entry in missing:
    print(entry)
print(f"{len(missing)} undocumented public symbol(s)", file=sys.stderr)
sys.exit(1 if missing else 0)
