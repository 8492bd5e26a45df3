"""Compare two training runs: every TensorBoard scalar and the evaluations in ``evaluation.json``.

    python benchmarks/compare_runs.py RUN_A RUN_B

Used to check that a refactor leaves a seeded run unchanged (timings aside).
"""

from __future__ import annotations

import glob
import json
import sys


def scalars(run: str) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out: dict[str, list[tuple[int, float]]] = {}
    for path in glob.glob(f"{run}/runs/*"):
        events = EventAccumulator(path)
        events.Reload()
        for tag in events.Tags()["scalars"]:
            out[tag] = [(e.step, e.value) for e in events.Scalars(tag)]
    return out


def main(a: str, b: str) -> int:
    sa, sb = scalars(a), scalars(b)
    common = sorted(set(sa) & set(sb))
    differ = [t for t in common if sa[t] != sb[t]]
    print(f"{len(common)} common scalar tags; only in {a}: {sorted(set(sa) - set(sb))}; "
          f"only in {b}: {sorted(set(sb) - set(sa))}")
    print(f"tags with different values: {len(differ)}")
    for tag in differ:
        print("  ", tag, sa[tag][:4], sb[tag][:4])
    with open(f"{a}/evaluation.json") as fa, open(f"{b}/evaluation.json") as fb:
        ea, eb = json.load(fa), json.load(fb)
    for key in ("before", "after"):
        print(key, "identical" if ea[key] == eb[key] else "DIFFERENT", ea[key], eb[key])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
