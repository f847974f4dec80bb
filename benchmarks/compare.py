#!/usr/bin/env python3
"""Before/after summary of two sets of interaction-benchmark JSON files (same cases).

    python3 benchmarks/compare.py BASE.json [BASE2.json ...] -- NEW.json [NEW2.json ...]

For every strategy (Auto included): the geometric mean over all (functor, cells, ppc) cases of
new time / base time (the best of the files of each side per case; below 1: faster), its range,
and the geometric mean of the speedup over Par-Part-NoLoop of the same run, before and after.
"""
import json
import math
import sys
from collections import defaultdict


def load(paths):
    best = {}
    for p in paths:
        for r in json.load(open(p))["results"]:
            if not r.get("supported", True) or r.get("ms") is None:
                continue
            key = (r["functor"], r["cells_per_side"], r["ppc"], r["strategy"])
            best[key] = min(best.get(key, math.inf), r["ms"])
    return best


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    i = argv.index("--")
    base, new = load(argv[:i]), load(argv[i + 1:])
    ratio, sp_base, sp_new = defaultdict(list), defaultdict(list), defaultdict(list)
    for key, t_new in new.items():
        if key not in base:
            continue
        f, c, p, s = key
        ratio[s].append(t_new / base[key])
        ref = (f, c, p, "par-part-noloop")
        if ref in base and ref in new:
            sp_base[s].append(base[ref] / base[key])
            sp_new[s].append(new[ref] / t_new)
    print(f"{'strategy':16} {'cases':>5} {'new/base':>9} {'min':>6} {'max':>6}   {'speedup vs par-part-noloop: base -> new':>40}")
    for s in sorted(ratio, key=lambda s: (s != "auto", s)):
        r = ratio[s]
        print(f"{s:16} {len(r):5d} {geomean(r):9.4f} {min(r):6.3f} {max(r):6.3f}   "
              f"{geomean(sp_base[s]):18.3f}x -> {geomean(sp_new[s]):.3f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
