#!/usr/bin/env python3
"""Checks the metastable model's figures (docs/overload.md) at one point of
its grid, from the JSON lines `herd --only metastable --json` prints on
stdin: no retries recover in about 10 s, a fixed delay never does, and the
recommended fleet configuration recovers within 5 s of no retries, with
`amplification_10s` at most 1.2 and at most 1.25 times the work no retries
waste. Exits 1 naming each figure that fails.
"""
import json
import sys

runs = {}
for line in sys.stdin:
    run = json.loads(line)
    runs[(run["policy"], run["clients"], run["load"], run["trigger_s"])] = run

failures = []
points = {key[1:] for key in runs}
for point in sorted(points):
    none = runs.get(("none",) + point)
    naive = runs.get(("naive",) + point)
    recommended = runs.get(("recommended",) + point)
    if none is None or naive is None or recommended is None:
        failures.append(f"{point}: none, naive and recommended are all needed")
        continue
    if none["recovery_s"] is None or not 5 <= none["recovery_s"] <= 15:
        failures.append(f"{point}: none recovers in {none['recovery_s']} s, not about 10")
    if naive["recovery_s"] is not None or naive["amplification_10s"] < 2.5:
        failures.append(
            f"{point}: naive recovers in {naive['recovery_s']} s "
            f"(amplification {naive['amplification_10s']}), it should never"
        )
    if recommended["recovery_s"] is None or recommended["recovery_s"] > none["recovery_s"] + 5:
        failures.append(f"{point}: recommended recovers in {recommended['recovery_s']} s")
    if recommended["amplification_10s"] > 1.2:
        failures.append(f"{point}: recommended amplifies {recommended['amplification_10s']}")
    if recommended["wasted_s"] > 1.25 * none["wasted_s"]:
        failures.append(
            f"{point}: recommended wastes {recommended['wasted_s']} s, none {none['wasted_s']} s"
        )
    print(
        f"{point}: none {none['recovery_s']} s, naive {naive['recovery_s']}, "
        f"recommended {recommended['recovery_s']} s "
        f"(amplification {recommended['amplification_10s']}, wasted {recommended['wasted_s']} s)"
    )
if not points:
    failures.append("no runs read")
for failure in failures:
    print(failure, file=sys.stderr)
sys.exit(1 if failures else 0)
