#!/usr/bin/env python3
"""Draws the CSV that `shmem-bench ... --csv FILE` writes: one SVG per table, the subject's
median (solid) beside its reference's median (dashed) against the message size, log-log, one
colour per operation. Tables without sizes (a rate, a barrier) become bar pairs.

    benches/plot.py FILE.csv [OUTDIR]        (default OUTDIR: the CSV's folder)

Plain Python 3, no packages: the SVG is written by hand, so CI and a bare machine can draw.
"""

import csv
import math
import os
import re
import sys
from collections import OrderedDict

W, H = 760, 460
L, R, T, B = 80, 190, 50, 60
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def ticks(lo, hi):
    """Powers of ten (and 2, 5 between them when the range is short) inside [lo, hi]."""
    out = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in ([1, 2, 5] if hi / lo < 1e3 else [1]):
            v = m * 10.0**e
            if lo <= v <= hi:
                out.append(v)
    return out or [lo, hi]


def fmt(v):
    if v >= 1 << 20 and v == int(v) and int(v) % (1 << 20) == 0:
        return f"{int(v) >> 20} MiB"
    if v >= 1024 and v == int(v) and int(v) % 1024 == 0:
        return f"{int(v) >> 10} KiB"
    return f"{v:g}"


def series_plot(title, unit, series):
    """series: OrderedDict name -> (dashed, [(x, y)])"""
    xs = [x for _, pts in series.values() for x, _ in pts]
    ys = [y for _, pts in series.values() for _, y in pts if y > 0]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys) / 1.5, max(ys) * 1.5
    if x0 == x1:
        x0, x1 = x0 / 2, x1 * 2
    lx = lambda x: L + (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) * (W - L - R)
    ly = lambda y: H - B - (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0)) * (H - T - B)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{esc(title)}</text>']
    for v in ticks(y0, y1):
        y = ly(v)
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
    for v in sorted(set(xs)):
        x = lx(v)
        o.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{T}" y2="{H - B}" stroke="#eee"/>')
        o.append(f'<text x="{x:.1f}" y="{H - B + 16}" text-anchor="middle">{fmt(v)}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#333"/>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 18}" text-anchor="middle">message size (bytes)</text>')
    o.append(f'<text x="18" y="{(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 18 {(T + H - B) / 2})">'
             f'{esc(unit)} (median)</text>')
    for i, (name, (dashed, pts)) in enumerate(series.items()):
        c = COLOURS[(i // 2) % len(COLOURS)] if len(series) > 1 else COLOURS[0]
        pts = sorted(p for p in pts if p[1] > 0)
        d = " ".join(f"{lx(x):.1f},{ly(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        o.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for x, y in pts:
            o.append(f'<circle cx="{lx(x):.1f}" cy="{ly(y):.1f}" r="3" fill="{c}"/>')
        ly_ = T + 14 + 18 * i
        o.append(f'<line x1="{W - R + 12}" x2="{W - R + 40}" y1="{ly_ - 4}" y2="{ly_ - 4}" stroke="{c}" stroke-width="2"{dash}/>')
        o.append(f'<text x="{W - R + 46}" y="{ly_}">{esc(name)}</text>')
    o.append("</svg>")
    return "\n".join(o)


def bar_plot(title, unit, rows):
    """rows: [(operation, median, reference, ref_median)]"""
    vmax = max(max(r[1], r[3]) for r in rows) * 1.15
    bw = (W - L - R) / (len(rows) * 3)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{esc(title)}</text>',
         f'<text x="18" y="{(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 18 {(T + H - B) / 2})">'
         f'{esc(unit)} (median)</text>']
    sy = lambda v: (H - T - B) * v / vmax
    for i, (op, m, ref, rm) in enumerate(rows):
        x = L + bw * (3 * i + 0.5)
        for j, (v, c, label) in enumerate([(m, COLOURS[0], "oxshmem"), (rm, "#999", ref)]):
            h = sy(v)
            o.append(f'<rect x="{x + j * bw:.1f}" y="{H - B - h:.1f}" width="{bw * 0.9:.1f}" height="{h:.1f}" fill="{c}"/>')
            o.append(f'<text x="{x + j * bw + bw * 0.45:.1f}" y="{H - B - h - 4:.1f}" text-anchor="middle">{v:.3g}</text>')
            o.append(f'<text x="{x + j * bw + bw * 0.45:.1f}" y="{H - B + 14 + 12 * j:.1f}" text-anchor="middle" '
                     f'font-size="10">{esc(label)}</text>')
        o.append(f'<text x="{x + bw:.1f}" y="{H - B + 44}" text-anchor="middle">{esc(op)}</text>')
    o.append(f'<line x1="{L}" x2="{W - R}" y1="{H - B}" y2="{H - B}" stroke="#333"/>')
    o.append("</svg>")
    return "\n".join(o)


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(path))
    os.makedirs(out, exist_ok=True)
    tables = OrderedDict()
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            tables.setdefault(row["table"], []).append(row)
    written = []
    for title, rows in tables.items():
        unit = rows[0]["unit"]
        sized = [r for r in rows if r["bytes"]]
        name = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:60] or "table"
        if len(sized) >= 2:
            series = OrderedDict()
            for r in sized:
                op = re.sub(r"\s*\d+\s*B$", "", r["operation"]).strip()
                series.setdefault(f"{op}", (False, []))[1].append((float(r["bytes"]), float(r["median"])))
                series.setdefault(f"{op}: {r['reference']}", (True, []))[1].append(
                    (float(r["bytes"]), float(r["ref_median"])))
            # A reference that changes with the size (raw-store at 8 B, memcpy above) is one
            # dashed line per name.
            merged = OrderedDict()
            for k, v in series.items():
                merged[k] = v
            svg = series_plot(title, unit, merged)
        else:
            svg = bar_plot(title, unit, [(r["operation"], float(r["median"]), r["reference"], float(r["ref_median"]))
                                         for r in rows])
        p = os.path.join(out, name + ".svg")
        with open(p, "w") as f:
            f.write(svg)
        written.append(p)
    for p in written:
        print(p)


if __name__ == "__main__":
    main()
