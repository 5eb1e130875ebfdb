"""The results table, the target verdicts, and the JSON document."""

from __future__ import annotations

from dataclasses import dataclass

from . import systems
from .runner import Cell
from .workloads import Workload

MIB = 2 ** 20


@dataclass
class Verdict:
    workload: str
    peer: str             # a peer system, "workload:<name>" (paimon-lab on another workload) or "peak RSS"
    limit: float
    ratio: float | None   # paimon-lab median time / peer median time (or peak RSS bytes for "peak RSS")
    kind: str = "time"    # time | workload | peak | step | flat (--scale: max/min time per row) | scale_peak
    cpu_ratio: float | None = None  # the same ratio of median CPU times (less sensitive to machine load)
    step: str | None = None  # kind "step": the timed step (lap) compared

    @property
    def outcome(self) -> str:
        if self.ratio is None:
            return "N/A"
        if self.kind in ("peak", "scale_peak"):
            return "PASS" if self.ratio < self.limit else "FAIL"
        return "PASS" if self.ratio <= self.limit else "FAIL"

    def describe(self) -> str:
        if self.kind == "peak":
            value = "-" if self.ratio is None else f"{self.ratio / MIB:,.0f} MiB"
            return f"{self.workload:<12} paimon-lab peak RSS  {value:>10} <  {self.limit / MIB:,.0f} MiB"
        if self.kind == "scale_peak":
            value = "-" if self.ratio is None else f"{self.ratio / MIB:,.0f} MiB"
            return f"{self.workload:<12} peak RSS at every size (max)  {value:>10} <  {self.limit / MIB:,.0f} MiB"
        if self.kind == "flat":
            ratio = _fmt(self.ratio, ".2f", "x")
            return (f"{self.workload:<12} time per row, slowest/fastest size ({self.peer}) {ratio:>6} <= "
                    f"{self.limit:.2f}x")
        if self.kind == "workload":
            other = self.peer.split(":", 1)[1]
            what = f"vs paimon-lab {other}"
        elif self.kind == "step":
            what = f"{self.step} vs {systems.SYSTEMS[self.peer].label}'s"
        else:
            what = f"vs {systems.SYSTEMS[self.peer].label}"
        ratio = _fmt(self.ratio, ".3f" if self.limit < 0.1 else ".2f", "x")
        limit = f"{self.limit:.3f}x" if self.limit < 0.1 else f"{self.limit:.2f}x"
        speed = f"  paimon-lab {1 / self.ratio:.1f}x faster, needs >= {1 / self.limit:.0f}x;" \
            if self.limit < 1 and self.ratio else ""
        cpu = "" if self.cpu_ratio is None else f"  [cpu ratio {self.cpu_ratio:.3f}x]"
        return f"{self.workload:<12} {what:<28} {ratio:>8} <= {limit:<7}{speed}{cpu}"

    def to_json(self) -> dict:
        return {"workload": self.workload, "peer": self.peer, "limit": self.limit, "ratio": self.ratio,
                "kind": self.kind, "cpu_ratio": self.cpu_ratio, "outcome": self.outcome, "step": self.step}


def _lab(cells: list[Cell]) -> Cell | None:
    return next((c for c in cells if c.system == systems.LAB and c.measured), None)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def verdicts(workloads: dict[str, Workload], results: dict[str, list[Cell]]) -> list[Verdict]:
    out = []
    for name, cells in results.items():
        lab = _lab(cells)
        workload = workloads[name]
        for peer, limit in workload.targets.items():
            if peer not in {c.system for c in cells}:
                continue  # peer not selected (--systems)
            other = next((c for c in cells if c.system == peer and c.measured), None)
            ratio = _ratio(lab.median_seconds, other.median_seconds) if lab and other else None
            cpu = _ratio(lab.median_cpu_seconds, other.median_cpu_seconds) if lab and other else None
            out.append(Verdict(name, peer, limit, ratio, cpu_ratio=cpu))
        for other_name, limit in workload.workload_targets.items():
            other = _lab(results.get(other_name, []))
            ratio = _ratio(lab.median_seconds, other.median_seconds) if lab and other else None
            cpu = _ratio(lab.median_cpu_seconds, other.median_cpu_seconds) if lab and other else None
            out.append(Verdict(name, f"workload:{other_name}", limit, ratio, "workload", cpu))
        for step, peers in workload.step_targets.items():
            for peer, limit in peers.items():
                if peer not in {c.system for c in cells}:
                    continue
                other = next((c for c in cells if c.system == peer and c.measured), None)
                mine = lab.median_laps().get(step) if lab else None
                theirs = other.median_laps().get(step) if other else None
                out.append(Verdict(name, peer, limit, _ratio(mine, theirs), "step", step=step))
        if workload.peak_limit is not None:
            out.append(Verdict(name, "peak RSS", float(workload.peak_limit),
                               lab.median_peak_rss if lab else None, "peak"))
    return out


def scale_verdicts(workloads: dict[str, Workload], runs: list[tuple[int, dict[str, list[Cell]]]]) -> list[Verdict]:
    """``--scale`` targets over all sizes: paimon-lab's time per row (median / rows) may vary by at
    most ``scale_flatness`` (slowest / fastest size), its median peak RSS stays under
    ``scale_peak_limit`` at every size. A size where paimon-lab has no measurement fails both."""
    out = []
    if len(runs) < 2:
        return out
    for name, workload in workloads.items():
        labs = [(rows, _lab(results.get(name, []))) for rows, results in runs]
        complete = all(lab is not None and lab.median_seconds for _, lab in labs)
        if workload.scale_flatness is not None:
            ratio = None
            if complete:
                per_row = [lab.median_seconds / rows for rows, lab in labs]
                ratio = max(per_row) / min(per_row)
            sizes = "/".join(f"{rows:,}" for rows, _ in labs)
            out.append(Verdict(name, sizes, workload.scale_flatness, ratio, "flat"))
        if workload.scale_peak_limit is not None:
            peaks = [lab.median_peak_rss for _, lab in labs if lab is not None]
            peak = max(peaks) if complete and all(p is not None for p in peaks) else None
            out.append(Verdict(name, "peak RSS", float(workload.scale_peak_limit), peak, "scale_peak"))
    return out


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


def table(results: dict[str, list[Cell]]) -> str:
    header = ["workload", "system", "median s", "min s", "max s", "cpu s", "peak RSS MiB", "op +MiB",
              "lab/this time", "lab/this cpu", "lab/this peak", "status"]
    rows = []
    for name, cells in results.items():
        lab = _lab(cells)
        for c in cells:
            times = [r.seconds for r in c.runs if r.seconds is not None]
            peak = c.median_peak_rss
            delta = c.median_op_delta
            rows.append([
                name, systems.SYSTEMS[c.system].label,
                _fmt(c.median_seconds, ".3f"), _fmt(min(times, default=None), ".3f"),
                _fmt(max(times, default=None), ".3f"), _fmt(c.median_cpu_seconds, ".3f"),
                _fmt(None if peak is None else peak / MIB, ".0f"), _fmt(None if delta is None else delta / MIB, ".0f"),
                _fmt(_ratio(lab.median_seconds, c.median_seconds) if lab and c.measured else None, ".2f", "x"),
                _fmt(_ratio(lab.median_cpu_seconds, c.median_cpu_seconds) if lab and c.measured else None,
                     ".2f", "x"),
                _fmt(_ratio(lab.median_peak_rss, peak) if lab and c.measured else None, ".2f", "x"),
                c.status if not c.reason or c.status == "ok" else f"{c.status}: {c.reason.splitlines()[0][:60]}",
            ])
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    right = set(range(2, len(header) - 1))

    def line(r):
        return "  ".join(str(v).rjust(w) if i in right else str(v).ljust(w)
                         for i, (v, w) in enumerate(zip(r, widths))).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def targets_text(found: list[Verdict], quick: bool) -> str:
    if not found:
        return "Targets: none for the selected workloads."
    lines = ["Targets (from the issues; paimon-lab median time / peer median time, or peak RSS):"]
    for v in found:
        lines.append(f"  {v.describe()}  {v.outcome}")
    if quick:
        lines.append("  (--quick: timings at this size are dominated by fixed costs; the verdicts are informational)")
    return "\n".join(lines)


def laps_table(results: dict[str, list[Cell]]) -> str:
    """Median time of every step of the multi-step workloads (upsert commits, filter scans, plans)."""
    blocks = []
    for name, cells in results.items():
        measured = [c for c in cells if c.measured and c.median_laps()]
        if not measured:
            continue
        steps = list(dict.fromkeys(step for c in measured for step in c.median_laps()))
        header = [name, *steps]
        rows = [[systems.SYSTEMS[c.system].label, *(_fmt(c.median_laps().get(s), ".3f") for s in steps)]
                for c in measured]
        widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
        fmt = lambda r: "  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w)  # noqa: E731
                                  for i, (v, w) in enumerate(zip(r, widths)))
        blocks.append("\n".join([fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]))
    if not blocks:
        return ""
    return "Steps (median seconds per step over the timed runs):\n\n" + "\n\n".join(blocks)


def profile_text(path: str, top: int = 12) -> str:
    """The functions with the most own time in a profiled run, with their share of the total.

    cProfile sees the calling thread only: time spent in worker threads (e.g. parallel file
    reads) shows up as waiting in the caller.
    """
    import pstats

    stats = pstats.Stats(path).stats  # (file, line, func) -> (cc, nc, tottime, cumtime, callers)
    total = sum(v[2] for v in stats.values()) or 1.0
    rows = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    lines = [f"  {'own s':>7} {'share':>6} {'cum s':>7}  function"]
    for (file, line, func), (_, ncalls, tottime, cumtime, _) in rows:
        where = func if file == "~" else f"{_short(file)}:{line}({func})"
        lines.append(f"  {tottime:7.3f} {tottime / total:6.1%} {cumtime:7.3f}  {where}  [{ncalls} calls]")
    return "\n".join(lines)


def _short(path: str) -> str:
    for marker in ("/site-packages/", "/paimon_lab/", "/bench/"):
        if marker in path:
            tail = path.split(marker, 1)[1]
            return tail if marker == "/site-packages/" else marker.strip("/") + "/" + tail
    if "/lib/python" in path:  # the standard library
        return path.split("/lib/", 1)[1].split("/", 1)[-1]
    return path
