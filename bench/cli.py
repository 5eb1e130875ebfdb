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

# --scale runs these unless --only says otherwise (memory_bound writes 10x the rows; planning's
# table does not grow past 1,000 snapshots).
SCALE_WORKLOADS = ("append", "read", "pk_upsert", "pk_read", "pk_compact")

EXIT_OK = 0
EXIT_FAILED = 1          # a mismatch (wrong data read back) or a system crashed
EXIT_TARGETS = 3         # only with --strict-targets: a performance target was missed


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of row counts: {text!r}")
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("row counts must be at least 1")
    return sizes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    workloads = all_workloads()
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark paimon-lab against pypaimon, Java Paimon, pypaimon-rust, delta-rs, pyiceberg and plain\n"
                    "pyarrow.\n"
                    "Every setup step and run happens in a fresh subprocess; times are medians of\n"
                    "--repeat runs after one (verified) warm-up run. See bench/README.md.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="workloads:\n" + "\n".join(f"  {w.name:<12} {w.description}" for w in workloads.values())
               + f"\n\nsystems: {', '.join(systems.SYSTEMS)}\n\nexit codes: 0 ok; 1 data mismatch or a "
                 "system failed; 3 target missed (only with --strict-targets)")
    p.add_argument("--rows", type=int, default=None, metavar="N",
                   help=f"rows in the data set (default {DEFAULT_ROWS:,}; {QUICK_ROWS:,} with --quick)")
    p.add_argument("--repeat", type=int, default=None, metavar="K",
                   help=f"timed runs per system and workload (default {DEFAULT_REPEAT}; {QUICK_REPEAT} with --quick; "
                        "0: the verified warm-up run is the one measurement)")
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
    p.add_argument("--cache-dir", metavar="DIR",
                   help="where slow-to-build tables (planning's 1,000-snapshot table) are kept across invocations "
                        "(default: <workdir>/_cache, so reuse --workdir to reuse them)")
    p.add_argument("--scale", metavar="N1,N2,...", type=_sizes,
                   help="run the selected workloads (default: " + " ".join(SCALE_WORKLOADS) + ") at each of these "
                        "row counts and write a chart of time and peak memory vs rows (see --chart)")
    p.add_argument("--chart", metavar="OUT", default=os.path.join("bench", "results", "scale"),
                   help="--scale chart path without extension: writes OUT.html (plotly), OUT.png (Playwright + Chromium, if it "
                        "works) and OUT.points.json (default bench/results/scale)")
    p.add_argument("--report", metavar="RESULTS.json",
                   help="print the table, steps and target verdicts of a saved --json run again (with this "
                        "checkout's targets), then exit")
    p.add_argument("--headline", action="store_true",
                   help="run the README's headline workloads (bench/headline.py), save them (--json, default "
                        "bench/charts/headline.json) and rewrite the README's headline table; with --report DOC, "
                        "re-render the table from a saved headline document")
    p.add_argument("--readme", metavar="README.md", help="the README --headline rewrites (default: the repository's)")
    p.add_argument("--list", action="store_true", help="list workloads and systems, then exit")
    args = p.parse_args(argv)
    if args.quick and args.no_verify:
        p.error("--quick always verifies; drop --no-verify")
    if args.scale and args.rows is not None:
        p.error("--scale gives the row counts; drop --rows")
    if args.headline and (args.only or args.systems or args.scale or args.quick):
        p.error("--headline runs a fixed set of workloads and systems: drop --only, --systems, --scale, --quick")
    args.rows = args.rows if args.rows is not None else (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    args.repeat = args.repeat if args.repeat is not None else (QUICK_REPEAT if args.quick else DEFAULT_REPEAT)
    if args.rows < 1 or args.repeat < 0:
        p.error("--rows must be at least 1 and --repeat at least 0")
    return args


def select_systems(named: list[str] | None, quick: bool) -> tuple[list[str], list[str]]:
    """(the systems to run, those ``--quick`` leaves out): the ones named, else every system but,
    with ``--quick``, those slow to start (``in_quick`` False: Java Paimon's JVM per process)."""
    names = [n for n in systems.SYSTEMS if not named or n in named]
    left_out = [n for n in names if quick and not named and not systems.SYSTEMS[n].in_quick]
    return [n for n in names if n not in left_out], left_out


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workloads = all_workloads()
    if args.list:
        for w in workloads.values():
            print(f"{w.name:<12} {w.description}")
        for cls in systems.SYSTEMS.values():
            why = cls.available()
            quick = "" if cls.in_quick else "  (not in --quick unless named)"
            print(f"system {cls.name:<10} {cls.label}{'  (unavailable: ' + why + ')' if why else quick}")
        return EXIT_OK
    if args.headline:
        from . import headline

        readme = args.readme or headline.README
        if args.report:
            return headline.report(args.report, readme)
        return headline.run(args.rows, args.repeat, args.json or headline.DEFAULT_JSON, readme, args.workdir)
    if args.report:
        return _report_json(args.report, workloads, args.quick)
    if args.scale:
        default = [n for n in SCALE_WORKLOADS if n in workloads]
        selected = {n: w for n, w in workloads.items() if n in (args.only or default)}
    else:
        # opt-in workloads (spark_cluster: starts a Spark cluster) run only when --only names them
        selected = {n: w for n, w in workloads.items()
                    if (n in args.only if args.only else not getattr(w, "opt_in", False))}
    system_names, left_out = select_systems(args.systems, args.quick)
    if left_out:
        _log(f"--quick leaves out {', '.join(left_out)} (name them with --systems to include them)")

    info = machine.describe()
    print(machine.summary(info))
    sys.stdout.flush()

    own_workdir = args.workdir is None
    workdir = tempfile.mkdtemp(prefix="paimon-bench-") if own_workdir else args.workdir
    os.makedirs(workdir, exist_ok=True)
    started = time.time()
    sizes = args.scale or [args.rows]
    runs = []  # (rows, expected, results, verdicts, failures)
    try:
        for rows in sizes:
            runs.append(_run_size(args, rows, selected, system_names, workdir, own_workdir))
    finally:
        if own_workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    failures = [c for _, _, _, _, failed in runs for c in failed]
    found = [v for _, _, _, verdicts, _ in runs for v in verdicts]
    scale_found = report.scale_verdicts(selected, [(rows, results) for rows, _, results, _, _ in runs])
    if scale_found:
        print("Scale targets (paimon-lab across the sizes):")
        print("\n".join(f"  {v.describe()}  {v.outcome}" for v in scale_found))
        print()
        found += scale_found
    if args.json:
        doc = {"machine": info, "started": started,
               "config": {"rows": sizes[0] if len(sizes) == 1 else sizes, "repeat": args.repeat,
                          "quick": args.quick, "verify": not args.no_verify, "seed": data.SEED,
                          "compression": systems.COMPRESSION, "zstd_level": systems.ZSTD_LEVEL,
                          "floor": systems.FLOOR_SETTINGS,
                          "workloads": list(selected), "systems": system_names},
               "ok": not failures}
        if len(runs) == 1:
            rows, expected, results, verdicts, _ = runs[0]
            doc.update({"expected": expected.to_json(),
                        "results": [c.to_json() for cells in results.values() for c in cells],
                        "targets": [v.to_json() for v in verdicts]})
        else:
            doc["sizes"] = [{"rows": rows, "expected": expected.to_json(),
                             "results": [c.to_json() for cells in results.values() for c in cells],
                             "targets": [v.to_json() for v in verdicts]}
                            for rows, expected, results, verdicts, _ in runs]
            doc["scale_targets"] = [v.to_json() for v in scale_found]
        doc["machine"]["load_average_after"] = machine.describe()["load_average"]
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"Wrote {args.json}")
    if args.scale:
        from . import chart

        print(chart.write([(rows, results) for rows, _, results, _, _ in runs], args.chart, info))

    if failures:
        return EXIT_FAILED
    if args.strict_targets and any(v.outcome == "FAIL" for v in found):
        return EXIT_TARGETS
    return EXIT_OK


def _run_size(args, n_rows: int, selected: dict, system_names: list[str], workdir: str, own_workdir: bool):
    """Generate the data set of ``n_rows`` rows, run the selected workloads and print the report."""
    compression = f"parquet, {systems.COMPRESSION} level {systems.ZSTD_LEVEL} (all systems)"
    print(f"\nConfig: {n_rows:,} rows, {args.repeat} timed run(s) + 1 warm-up per system "
          f"(fewer for slow workloads: {', '.join(f'{n} {w.max_repeat}' for n, w in selected.items() if w.max_repeat)}), "
          f"{compression}, verify={'on (every run)' if not args.no_verify else 'off'}")
    if "pyarrow" in system_names:
        print(systems.floor_settings_text())
    sys.stdout.flush()
    t0 = time.perf_counter()
    data_path = os.path.join(workdir, f"data-{n_rows}.arrow")
    expected = data.write_data_set(n_rows, data_path)  # batch by batch: never whole in memory
    _log(f"generated {n_rows:,} rows (seed {data.SEED}, checksum {expected.checksum}) "
         f"in {time.perf_counter() - t0:.2f}s; work dir {workdir}")
    config = Config(n_rows, args.repeat, not args.no_verify, workdir, args.timeout, args.keep,
                    args.profile, args.cache_dir, args.quick)
    # paimon-lab's disk cache of decoded manifests: inside the work directory, not the user's (the
    # planning workloads point it per run, see bench.workloads.planning)
    os.environ.setdefault("PAIMON_LAB_CACHE_DIR", os.path.join(workdir, "_paimon_lab_cache"))
    results = {}
    try:
        for name, workload in selected.items():
            _log(f"[{name}] {workload.description}")
            results[name] = run_workload(workload, system_names, config, data_path, expected, _log)
    finally:
        if not args.keep:  # tables shared between workloads of this size
            shutil.rmtree(os.path.join(workdir, "_shared"), ignore_errors=True)
            if not own_workdir:
                os.remove(data_path)
                if os.path.exists(data_path + ".pk_final.json"):
                    os.remove(data_path + ".pk_final.json")

    print()
    print(report.table(results))
    print()
    steps = report.laps_table(results)
    if steps:
        print(steps)
        print()
    found = report.verdicts(selected, results)
    print(report.targets_text(found, args.quick))
    print()

    all_cells = [c for cells in results.values() for c in cells]
    failures = [c for c in all_cells if c.status in ("error", "mismatch")]
    if args.no_verify:
        print("Verification: skipped (--no-verify)")
    else:
        def verified(c):  # the warm-up and every timed run (with --quick the warm-up may be the run)
            runs = list(c.runs)
            if c.warmup is not None and not any(r is c.warmup for r in runs):
                runs.insert(0, c.warmup)
            return runs

        checked = sum(len(r.fingerprints) for c in all_cells for r in verified(c))
        print(f"Verification: {checked} read-back(s) of the warm-up and of every timed run compared with the "
              f"expected result (row count, columns, order-free checksum, computed after the clock stopped; "
              f"the input rows are {expected.rows:,} rows, checksum {expected.checksum}; each workload's "
              f"model is plain pyarrow over them):")
        for c in all_cells:
            if c.warmup and c.warmup.fingerprints:
                readers = ", ".join(systems.reader_label(r) for r in c.warmup.fingerprints)
                verdict = "MISMATCH" if c.status == "mismatch" else "ok"
                runs = sum(1 for r in verified(c) if r.fingerprints)
                print(f"  {c.workload:<12} {systems.SYSTEMS[c.system].label:<16} {runs} run(s); warm-up read back by "
                      f"{readers}: {verdict}")
    for c in all_cells:
        if c.status in ("skipped", "n/a"):
            print(f"Note: {c.workload}/{c.system} {c.status}: {c.reason}")
    for c in failures:
        print(f"FAILED: {c.workload}/{c.system} {c.status}:\n  " + c.reason.replace("\n", "\n  "))

    for c in all_cells:
        if c.profile:
            print(f"\nProfile of {c.workload}/{systems.SYSTEMS[c.system].label} (one extra run, {c.profile}):")
            print(report.profile_text(c.profile))
    sys.stdout.flush()
    return n_rows, expected, results, found, failures


def _cells_from_json(results: list[dict]) -> dict[str, list]:
    from dataclasses import fields

    from .runner import Cell, Run

    names = {f.name for f in fields(Run)}

    def run(obj):
        return None if obj is None else Run(**{k: v for k, v in obj.items() if k in names})

    out: dict[str, list] = {}
    for r in results:
        cell = Cell(r["workload"], r["system"], r["status"], r.get("reason", ""), run(r.get("setup")),
                    run(r.get("warmup")), [run(x) for x in r.get("runs", [])], r.get("profile"))
        out.setdefault(cell.workload, []).append(cell)
    return out


def _report_json(path: str, workloads: dict, quick: bool) -> int:
    with open(path) as f:
        doc = json.load(f)
    print(machine.summary(doc["machine"]))
    sizes = doc.get("sizes") or [{"rows": doc["config"]["rows"], "results": doc["results"]}]
    runs = []
    for size in sizes:
        results = _cells_from_json(size["results"])
        runs.append((size["rows"], results))
        selected = {n: workloads[n] for n in results if n in workloads}
        print(f"\n{size['rows']:,} rows\n")
        print(report.table(results))
        print()
        steps = report.laps_table(results)
        if steps:
            print(steps + "\n")
        print(report.targets_text(report.verdicts(selected, results), quick or doc["config"].get("quick", False)))
    names = dict.fromkeys(n for _, results in runs for n in results)
    scale_found = report.scale_verdicts({n: workloads[n] for n in names if n in workloads}, runs)
    if scale_found:
        print("\nScale targets (paimon-lab across the sizes):")
        print("\n".join(f"  {v.describe()}  {v.outcome}" for v in scale_found))
    return EXIT_OK
