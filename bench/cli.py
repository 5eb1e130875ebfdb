"""``python -m bench``: command line, orchestration and exit code."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from . import data, machine, report, systems
from .runner import Config, run_workload
from .workloads import all_workloads

DEFAULT_ROWS = 1_000_000
DEFAULT_REPEAT = 5
QUICK_ROWS = 20_000
QUICK_REPEAT = 2

EXIT_OK = 0
EXIT_FAILED = 1          # a mismatch (wrong data read back) or a system crashed
EXIT_TARGETS = 3         # only with --strict-targets: a performance target was missed


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    workloads = all_workloads()
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark paimon-lab against pypaimon and plain pyarrow.\n"
                    "Every setup step and run happens in a fresh subprocess; times are medians of\n"
                    "--repeat runs after one (verified) warm-up run. See bench/README.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="workloads:\n" + "\n".join(f"  {w.name:<8} {w.description}" for w in workloads.values())
               + f"\n\nsystems: {', '.join(systems.SYSTEMS)}\n\nexit codes: 0 ok; 1 data mismatch or a "
                 "system failed; 3 target missed (only with --strict-targets)")
    p.add_argument("--rows", type=int, default=None, metavar="N",
                   help=f"rows in the data set (default {DEFAULT_ROWS:,}; {QUICK_ROWS:,} with --quick)")
    p.add_argument("--repeat", type=int, default=None, metavar="K",
                   help=f"timed runs per system and workload (default {DEFAULT_REPEAT}; {QUICK_REPEAT} with --quick)")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke test: {QUICK_ROWS:,} rows, {QUICK_REPEAT} repeats, results verified (CI runs this)")
    p.add_argument("--only", nargs="+", choices=list(workloads), metavar="WORKLOAD",
                   help="run only these workloads")
    p.add_argument("--systems", nargs="+", choices=list(systems.SYSTEMS), metavar="SYSTEM",
                   help="run only these systems (default: all)")
    p.add_argument("--json", metavar="OUT.json", help="also write every measurement to this file")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the row-count/checksum verification of the warm-up runs (not allowed with --quick)")
    p.add_argument("--strict-targets", action="store_true", help="exit 3 if a performance target is missed")
    p.add_argument("--workdir", metavar="DIR", help="where tables are written (default: a fresh temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the tables and data file afterwards")
    p.add_argument("--timeout", type=float, default=1800, metavar="S", help="per-process time limit (default 1800)")
    p.add_argument("--profile", metavar="DIR",
                   help="after the timed runs, run paimon-lab once more per workload under cProfile, save "
                        "DIR/<workload>-paimon_lab.pstats and print its top functions (not counted in the table)")
    p.add_argument("--list", action="store_true", help="list workloads and systems, then exit")
    args = p.parse_args(argv)
    if args.quick and args.no_verify:
        p.error("--quick always verifies; drop --no-verify")
    args.rows = args.rows if args.rows is not None else (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    args.repeat = args.repeat if args.repeat is not None else (QUICK_REPEAT if args.quick else DEFAULT_REPEAT)
    if args.rows < 1 or args.repeat < 1:
        p.error("--rows and --repeat must be at least 1")
    return args


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workloads = all_workloads()
    if args.list:
        for w in workloads.values():
            print(f"{w.name:<8} {w.description}")
        for cls in systems.SYSTEMS.values():
            why = cls.available()
            print(f"system {cls.name:<10} {cls.label}{'  (unavailable: ' + why + ')' if why else ''}")
        return EXIT_OK
    selected = {n: w for n, w in workloads.items() if not args.only or n in args.only}
    system_names = [n for n in systems.SYSTEMS if not args.systems or n in args.systems]

    info = machine.describe()
    print(machine.summary(info))
    compression = f"parquet, {systems.COMPRESSION} level {systems.ZSTD_LEVEL} (all systems)"
    print(f"Config: {args.rows:,} rows, {args.repeat} timed run(s) + 1 warm-up per system, {compression}, "
          f"verify={'on' if not args.no_verify else 'off'}")
    sys.stdout.flush()

    own_workdir = args.workdir is None
    workdir = tempfile.mkdtemp(prefix="paimon-bench-") if own_workdir else args.workdir
    os.makedirs(workdir, exist_ok=True)
    started = time.time()
    try:
        t0 = time.perf_counter()
        rows = data.generate(args.rows)
        expected = data.fingerprint(rows)
        data_path = os.path.join(workdir, f"data-{args.rows}.arrow")
        data.save(rows, data_path)
        del rows
        _log(f"generated {args.rows:,} rows (seed {data.SEED}, checksum {expected.checksum}) "
             f"in {time.perf_counter() - t0:.2f}s; work dir {workdir}")
        config = Config(args.rows, args.repeat, not args.no_verify, workdir, args.timeout, args.keep,
                        args.profile)
        results = {}
        for name, workload in selected.items():
            _log(f"[{name}] {workload.description}")
            results[name] = run_workload(workload, system_names, config, data_path, expected, _log)
    finally:
        if own_workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print()
    print(report.table(results))
    print()
    found = report.verdicts(selected, results)
    print(report.targets_text(found, args.quick))
    print()

    all_cells = [c for cells in results.values() for c in cells]
    failures = [c for c in all_cells if c.status in ("error", "mismatch")]
    if args.no_verify:
        print("Verification: skipped (--no-verify)")
    else:
        checked = [(c, reader) for c in all_cells if c.warmup for reader in c.warmup.fingerprints]
        print(f"Verification: {len(checked)} read-back(s) compared with the input "
              f"(rows={expected.rows:,}, checksum={expected.checksum}):")
        for c in all_cells:
            if c.warmup and c.warmup.fingerprints:
                readers = ", ".join(systems.SYSTEMS[r].label for r in c.warmup.fingerprints)
                verdict = "MISMATCH" if c.status == "mismatch" else "ok"
                print(f"  {c.workload:<8} {systems.SYSTEMS[c.system].label:<16} read back by {readers}: {verdict}")
    for c in all_cells:
        if c.status in ("skipped", "n/a"):
            print(f"Note: {c.workload}/{c.system} {c.status}: {c.reason}")
    for c in failures:
        print(f"FAILED: {c.workload}/{c.system} {c.status}:\n  " + c.reason.replace("\n", "\n  "))

    for c in all_cells:
        if c.profile:
            print(f"\nProfile of {c.workload}/{systems.SYSTEMS[c.system].label} (one extra run, {c.profile}):")
            print(report.profile_text(c.profile))

    if args.json:
        doc = {"machine": info, "started": started,
               "config": {"rows": args.rows, "repeat": args.repeat, "quick": args.quick,
                          "verify": not args.no_verify, "seed": data.SEED,
                          "compression": systems.COMPRESSION, "zstd_level": systems.ZSTD_LEVEL,
                          "workloads": list(selected), "systems": system_names},
               "expected": expected.to_json(),
               "results": [c.to_json() for c in all_cells],
               "targets": [v.to_json() for v in found],
               "ok": not failures}
        doc["machine"]["load_average_after"] = machine.describe()["load_average"]
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"Wrote {args.json}")

    if failures:
        return EXIT_FAILED
    if args.strict_targets and any(v.outcome == "FAIL" for v in found):
        return EXIT_TARGETS
    return EXIT_OK
