"""The Array API suite's result from its pytest JSON report: tests passed, failed and
skipped, the pass rate over the tests run (passed / (passed + failed)), each failure's first
line written to a file, grouped by test function; exit 1 below ``--floor`` percent."""

from __future__ import annotations

import argparse
import collections
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("report")
    parser.add_argument("--failures", required=True, help="where to write the failures, one per line")
    parser.add_argument("--floor", type=float, default=0.0, help="the lowest pass rate (percent) accepted")
    args = parser.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    outcomes = collections.Counter()
    failed: list[tuple[str, str]] = []
    for test in report["tests"]:
        outcome = test["outcome"]
        outcomes[outcome] += 1
        if outcome in ("failed", "error"):
            stage = test.get("call") or test.get("setup") or {}
            crash = (stage.get("crash") or {}).get("message", "") or stage.get("longrepr", "")
            failed.append((test["nodeid"], crash.strip().splitlines()[0][:200] if crash.strip() else ""))
    passed, broken = outcomes["passed"], outcomes["failed"] + outcomes["error"]
    run = passed + broken
    rate = 100.0 * passed / run if run else 0.0
    with open(args.failures, "w") as f:
        for nodeid, why in sorted(failed):
            f.write(f"{nodeid}\t{why}\n")
    by_function = collections.Counter(nodeid.split("[")[0] for nodeid, _ in failed)
    print(f"array api: {passed} passed, {broken} failed, {outcomes['skipped']} skipped; "
          f"{rate:.1f}% of the {run} tests run pass (failures: {args.failures})")
    for function, count in by_function.most_common():
        print(f"  {count:4d} failed  {function}")
    if rate < args.floor:
        print(f"array api: {rate:.1f}% is below the floor of {args.floor}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
