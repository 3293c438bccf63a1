"""One fuzz run of the CLI across the six parsers (issue 26): N hostile inputs from tests/test_fuzz_hostile.py's
generators (config, toml, size, count, log, launch; N / 6 each, seeded), each run through a real ``kvplan`` command
in-process, and the counts of what went wrong.

    python scripts/fuzz_run.py --n 10000 [--seed 0] [--only launch] [--show 5]

Seeds depend on the parser's place in GENERATORS, not on ``--only``: ``--only log --n 2500`` replays the log inputs of
a full ``--n 15000`` run (the same ``per`` count) input for input.

Prints per parser: inputs, exit codes, and the problems found (exit 1, tracebacks, errors of more than one line, raw
escapes on stdout, CSV formula cells), then up to ``--show`` examples of each problem.  Exit status 1 when any
problem was found.  No timing is asserted; the wall time is printed for the record (docs/hardening.md).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="inputs in all (split evenly over the parsers)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", action="append", help="run only this parser (repeatable)")
    ap.add_argument("--show", type=int, default=3, help="examples printed per problem kind")
    opts = ap.parse_args()

    from tests.test_fuzz_hostile import GENERATORS, run_case

    parsers = opts.only or list(GENERATORS)
    per = max(1, opts.n // len(parsers))
    codes: dict[str, Counter] = defaultdict(Counter)
    problems: dict[str, Counter] = defaultdict(Counter)
    examples: dict[str, list] = defaultdict(list)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        for parser in parsers:
            pi = list(GENERATORS).index(parser)  # the seed depends on the parser, not on --only: a rerun replays
            for i in range(per):
                seed = opts.seed * 1_000_003 + pi * 10_000_019 + i
                case = GENERATORS[parser](random.Random(seed))
                tmp = Path(d) / f"{parser}-{i}"
                tmp.mkdir()
                out = run_case(case, tmp)
                codes[parser][out.exit_code] += 1
                for p in out.problems:
                    kind = p.split(":")[0]
                    problems[parser][kind] += 1
                    if len(examples[f"{parser}/{kind}"]) < opts.show:
                        examples[f"{parser}/{kind}"].append((seed, case.args, p, out.stderr.strip()[:300]))
                for f in sorted(tmp.rglob("*"), reverse=True):  # keep the disk small
                    f.unlink() if f.is_file() else f.rmdir()
                tmp.rmdir()
            print(
                f"{parser:7s} inputs {sum(codes[parser].values()):6,}  exits "
                + " ".join(f"{k}:{v}" for k, v in sorted(codes[parser].items()))
                + "  problems "
                + (", ".join(f"{k} {v}" for k, v in problems[parser].items()) or "none"),
                flush=True,
            )
    total = sum(sum(c.values()) for c in codes.values())
    exit1 = sum(c.get(1, 0) for c in codes.values())
    tb = sum(p.get("traceback", 0) + p.get("traceback in the output", 0) for p in problems.values())
    raw = sum(p.get("raw escapes on stdout", 0) for p in problems.values())
    print(f"total {total:,} inputs in {time.perf_counter() - t0:.0f} s: exit 1 {exit1}, tracebacks {tb}, raw {raw}")
    for key, rows in examples.items():
        print(f"-- {key}")
        for seed, args, p, err in rows:
            print(f"   seed {seed}: {' '.join(a[:60] for a in args)}\n      {p[:300]}\n      stderr: {err}")
    return 1 if any(problems.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
