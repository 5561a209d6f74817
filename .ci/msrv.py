#!/usr/bin/env python3
"""Checks that the declared rust-version is true for every crate a user of the
published crates can build: each package reachable from retry-runtime,
retry-macros and retry-core through normal and build dependencies, with all
features on, must declare a rust-version no newer than ours.

Reads `cargo metadata` of the locked graph; prints the offenders and exits 1.
"""
import json
import subprocess
import sys

PUBLISHED = {"retry-runtime", "retry-macros", "retry-core"}


def version_tuple(text):
    return tuple(int(part) for part in text.split("."))


meta = json.loads(
    subprocess.check_output(
        ["cargo", "metadata", "--format-version", "1", "--all-features", "--locked"]
    )
)
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
roots = [pid for pid, p in packages.items() if p["name"] in PUBLISHED]
declared = {packages[pid]["rust_version"] for pid in roots}
if len(declared) != 1 or None in declared:
    sys.exit(f"published crates declare different rust-versions: {declared}")
ours = declared.pop()

seen, stack = set(), list(roots)
while stack:
    pid = stack.pop()
    if pid in seen:
        continue
    seen.add(pid)
    for dep in nodes[pid]["deps"]:
        if any(kind["kind"] in (None, "build") for kind in dep["dep_kinds"]):
            stack.append(dep["pkg"])

too_new = []
for pid in sorted(seen, key=lambda pid: packages[pid]["name"]):
    package = packages[pid]
    needed = package.get("rust_version")
    if needed and version_tuple(needed) > version_tuple(ours):
        too_new.append(f"  {package['name']} {package['version']} needs {needed}")

newest = max(
    (packages[pid].get("rust_version") or "0" for pid in seen), key=version_tuple
)
print(f"rust-version {ours}: {len(seen)} crates in the published graph, newest needs {newest}")
if too_new:
    print("these need a newer Rust than declared:")
    print("\n".join(too_new))
    sys.exit(1)
