#!/usr/bin/env python3
"""Draws the CSV that `shmem-bench ... --csv FILE` or `device-bench ... --csv FILE` writes: one
SVG per table, titled with what it compares and, under the title, the machine, the PE count and
the date of the run.

shmem-bench tables with sizes are log-log lines against the message size: each operation's
median solid, in its own colour; each reference's median dashed, in the reference's own colour
(grey for memcpy, brown for a raw store or load, ...), so a reference measured at one size only
(the raw store at 8 B) is a square in its colour, not a dot in the subject's. Tables without
sizes (a rate, a barrier) are bar pairs on a linear axis with ticks. device-bench's latency table
is lines per channel (put solid, get dashed); its other tables are bars per channel.

    benches/plot.py FILE.csv [OUTDIR]        (default OUTDIR: the CSV's folder)

Plain Python 3, no packages: the SVG is written by hand, so CI and a bare machine can draw.
Rows appended by several runs to one file: the last row of each operation wins.
"""

import csv
import datetime
import math
import os
import re
import sys
from collections import OrderedDict

W, H = 900, 500
L, R, T, B = 80, 230, 70, 60
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#e377c2", "#bcbd22"]
# References: colours of their own, none of them a subject's.
REF_COLOURS = ["#7f7f7f", "#8c564b", "#000000", "#c49c94", "#555555"]
CHANNEL_COLOURS = {"p2p": "#2ca02c", "proxy": "#1f77b4", "proxy-spin": "#9467bd", "ibgda": "#d62728",
                   "p2p with idle proxy": "#2ca02c", "p2p alone": "#98df8a"}


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def log_ticks(lo, hi):
    """Powers of ten (and 2, 5 between them when the range is short) inside [lo, hi]."""
    out = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in ([1, 2, 5] if hi / lo < 1e3 else [1]):
            v = m * 10.0**e
            if lo <= v <= hi:
                out.append(v)
    return out or [lo, hi]


def linear_ticks(hi, want=5):
    """0 and round steps (1, 2 or 5 times a power of ten) up to at least hi: (ticks, top)."""
    if hi <= 0:
        return [0.0, 1.0], 1.0
    raw = hi / want
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    n = math.ceil(hi / step)
    return [i * step for i in range(n + 1)], n * step


def fmt(v):
    if v >= 1 << 20 and v == int(v) and int(v) % (1 << 20) == 0:
        return f"{int(v) >> 20} MiB"
    if v >= 1024 and v == int(v) and int(v) % 1024 == 0:
        return f"{int(v) >> 10} KiB"
    return f"{v:g}"


def wrap(text, width):
    """Splits text into lines of at most width characters, at spaces."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line] if line else lines


def header(title, subtitle):
    """The SVG's start: white ground, the title (wrapped to two lines at most) and the subtitle."""
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>']
    lines = wrap(title, 110)[:2]
    for i, line in enumerate(lines):
        o.append(f'<text x="{W / 2}" y="{20 + 17 * i}" text-anchor="middle" font-size="14">{esc(line)}</text>')
    o.append(f'<text x="{W / 2}" y="{22 + 17 * len(lines)}" text-anchor="middle" fill="#555">{esc(subtitle)}</text>')
    return o


def legend(o, entries):
    """entries: [(label, colour, dashed, marker)] in the right margin."""
    for i, (label, c, dashed, marker) in enumerate(entries):
        y = T + 14 + 18 * i
        x0, x1 = W - R + 12, W - R + 40
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        o.append(f'<line x1="{x0}" x2="{x1}" y1="{y - 4}" y2="{y - 4}" stroke="{c}" stroke-width="2"{dash}/>')
        o.append(mark(marker, (x0 + x1) / 2, y - 4, c))
        o.append(f'<text x="{x1 + 6}" y="{y}">{esc(label)}</text>')


def mark(kind, x, y, c):
    if kind == "square":
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" fill="{c}"/>'
    if kind == "bar":
        return f'<rect x="{x - 6:.1f}" y="{y - 5:.1f}" width="12" height="10" fill="{c}"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{c}"/>'


def line_plot(title, subtitle, unit, series, xlabel="message size (bytes)"):
    """series: OrderedDict key -> (colour, dashed, marker, [(x, y)], legend label). Series that
    share a legend label (one reference measured beside several operations) share its entry."""
    xs = [x for s in series.values() for x, _ in s[3]]
    ys = [y for s in series.values() for _, y in s[3] if y > 0]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys) / 1.5, max(ys) * 1.5
    # A margin on both sides, so the first and last sizes' marks are not on the frame.
    x0, x1 = x0 / 1.35, x1 * 1.35
    lx = lambda x: L + (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) * (W - L - R)
    ly = lambda y: H - B - (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0)) * (H - T - B)
    o = header(title, subtitle)
    for v in log_ticks(y0, y1):
        y = ly(v)
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
    for v in sorted(set(xs)):
        x = lx(v)
        o.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{T}" y2="{H - B}" stroke="#eee"/>')
        o.append(f'<text x="{x:.1f}" y="{H - B + 16}" text-anchor="middle">{fmt(v)}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#333"/>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 18}" text-anchor="middle">{esc(xlabel)}</text>')
    o.append(f'<text x="18" y="{(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 18 {(T + H - B) / 2})">'
             f'{esc(unit)} (median; log scale)</text>')
    for c, dashed, marker, pts, _ in series.values():
        pts = sorted(p for p in pts if p[1] > 0)
        if len(pts) > 1:
            d = " ".join(f"{lx(x):.1f},{ly(y):.1f}" for x, y in pts)
            dash = ' stroke-dasharray="6 4"' if dashed else ""
            o.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for x, y in pts:
            o.append(mark(marker, lx(x), ly(y), c))
    entries = OrderedDict()
    for c, dashed, marker, _, label in series.values():
        entries.setdefault(label, (label, c, dashed, marker))
    legend(o, list(entries.values()))
    o.append("</svg>")
    return "\n".join(o)


def bar_plot(title, subtitle, unit, groups, entries):
    """groups: [(label under the group, [(value, colour)])]; entries: the legend's
    [(label, colour)]. A linear y axis from 0, with ticks and grid lines."""
    vmax = max(v for _, bars in groups for v, _ in bars)
    yt, top = linear_ticks(vmax * 1.1)
    nbars = sum(len(bars) for _, bars in groups) + len(groups)  # a gap after each group
    bw = min(60.0, (W - L - R) / max(nbars, 1))
    sy = lambda v: (H - T - B) * v / top
    o = header(title, subtitle)
    for v in yt:
        y = H - B - sy(v)
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
    o.append(f'<text x="18" y="{(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 18 {(T + H - B) / 2})">'
             f'{esc(unit)} (median)</text>')
    x = L + bw / 2
    for label, bars in groups:
        start = x
        for v, c in bars:
            h = sy(v)
            o.append(f'<rect x="{x:.1f}" y="{H - B - h:.1f}" width="{bw * 0.9:.1f}" height="{h:.1f}" fill="{c}"/>')
            shown = f"{v:.0f}" if v >= 1000 else f"{v:.3g}"
            o.append(f'<text x="{x + bw * 0.45:.1f}" y="{H - B - h - 4:.1f}" text-anchor="middle" font-size="11">'
                     f'{shown}</text>')
            x += bw
        # One label per group, on one line under the group's bars.
        o.append(f'<text x="{(start + x - bw * 0.1) / 2:.1f}" y="{H - B + 18}" text-anchor="middle">{esc(label)}</text>')
        x += bw
    o.append(f'<line x1="{L}" x2="{W - R}" y1="{H - B}" y2="{H - B}" stroke="#333"/>')
    o.append(f'<line x1="{L}" x2="{L}" y1="{T}" y2="{H - B}" stroke="#333"/>')
    legend(o, [(label, c, False, "bar") for label, c in entries])
    o.append("</svg>")
    return "\n".join(o)


def run_line(rows, title, csv_path):
    """The subtitle: machine, PE count and date of the table's (last) run, as the rows record
    them; for a CSV written before they did, the PE count in the title and the file's date."""
    last = rows[-1]
    machine = (last.get("machine") or "").strip() or "machine not recorded"
    pes = (last.get("pes") or "").strip()
    if not pes:
        m = re.search(r"(\d+) PEs", title)
        pes = m.group(1) if m else ("2" if "PE 0" in title and "PE 1" in title else "")
    date = (last.get("date") or "").strip()
    if not date:
        mtime = os.path.getmtime(csv_path)
        date = datetime.datetime.fromtimestamp(mtime, datetime.timezone.utc).strftime("%Y-%m-%d") + " (file date)"
    return f"{machine} · {pes + ' PEs' if pes else 'PE count not recorded'} · {date}"


def last_per(rows, key):
    """The last row of each key, in the order the keys first appear."""
    out = OrderedDict()
    for r in rows:
        out[key(r)] = r
    return list(out.values())


def slug(title):
    return re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:60] or "table"


def shmem_plot(title, rows, csv_path):
    rows = last_per(rows, lambda r: r["operation"])
    unit = rows[0]["unit"]
    sub = run_line(rows, title, csv_path)
    refs = list(OrderedDict.fromkeys(r["reference"] for r in rows))
    ref_colour = {name: REF_COLOURS[i % len(REF_COLOURS)] for i, name in enumerate(refs)}
    sized = [r for r in rows if r["bytes"]]
    if len(sized) >= 2:
        ops = list(OrderedDict.fromkeys(re.sub(r"\s*\d+\s*B$", "", r["operation"]).strip() for r in sized))
        compared = f"{title}: oxshmem {', '.join(ops)} (solid) vs {', '.join(refs)} (dashed)"
        series = OrderedDict()
        for r in sized:
            op = re.sub(r"\s*\d+\s*B$", "", r["operation"]).strip()
            c = COLOURS[ops.index(op) % len(COLOURS)]
            series.setdefault(op, (c, False, "circle", [], op))[3].append((float(r["bytes"]), float(r["median"])))
        for r in sized:
            ref = r["reference"]
            op = re.sub(r"\s*\d+\s*B$", "", r["operation"]).strip()
            sizes = sorted(int(x["bytes"]) for x in sized if x["reference"] == ref)
            label = f"{ref} (reference" + (f", {fmt(sizes[0])} B)" if len(set(sizes)) == 1 else ")")
            # One dashed line per operation it was measured beside, all in the reference's colour.
            series.setdefault((ref, op), (ref_colour[ref], True, "square", [], label))[3].append(
                (float(r["bytes"]), float(r["ref_median"])))
        return line_plot(compared, sub, unit, series)
    compared = f"{title}: oxshmem vs {', '.join(refs)}"
    groups = [(r["operation"], [(float(r["median"]), COLOURS[0]), (float(r["ref_median"]), ref_colour[r["reference"]])])
              for r in rows]
    entries = [("oxshmem", COLOURS[0])] + [(f"{name} (reference)", ref_colour[name]) for name in refs]
    return bar_plot(compared, sub, unit, groups, entries)


HUMAN = re.compile(r"^(\w+) (\d+) (B|KiB|MiB)$")


def device_plot(table, rows, csv_path):
    rows = last_per(rows, lambda r: (r["operation"], r["channel"]))
    unit = rows[0]["unit"]
    channels = list(OrderedDict.fromkeys(r["channel"] for r in rows))
    colour = {ch: CHANNEL_COLOURS.get(ch, COLOURS[i % len(COLOURS)]) for i, ch in enumerate(channels)}
    sub = run_line(rows, table, csv_path)
    vs = " vs ".join(channels)
    sized = [(HUMAN.match(r["operation"]), r) for r in rows]
    if all(m for m, _ in sized) and len(sized) >= 2:
        ops = list(OrderedDict.fromkeys(m.group(1) for m, _ in sized))
        series = OrderedDict()
        for m, r in sized:
            size = int(m.group(2)) * {"B": 1, "KiB": 1024, "MiB": 1 << 20}[m.group(3)]
            op = m.group(1)
            label = f"{r['channel']} {op}"
            series.setdefault(label, (colour[r["channel"]], ops.index(op) > 0,
                                      "circle" if ops.index(op) == 0 else "square", [], label))[3].append(
                (float(size), float(r["median"])))
        what = " and ".join(ops)
        title = (f"device {table}: {what} from one device thread, {vs} "
                 f"({ops[0]} solid{', ' + ops[1] + ' dashed' if len(ops) > 1 else ''})")
        return line_plot(title, sub, unit, series)
    ops = list(OrderedDict.fromkeys(r["operation"] for r in rows))
    groups = [(op, [(float(r["median"]), colour[r["channel"]]) for r in rows if r["operation"] == op]) for op in ops]
    title = f"device {table}: {', '.join(ops)}, {vs}"
    return bar_plot(title, sub, unit, groups, [(ch, colour[ch]) for ch in channels])


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stdout if len(sys.argv) >= 2 else sys.stderr)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(path))
    os.makedirs(out, exist_ok=True)
    tables = OrderedDict()
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        device = "channel" in (reader.fieldnames or [])
        for row in reader:
            tables.setdefault(row["table"], []).append(row)
    written = []
    for title, rows in tables.items():
        if device:
            svg, name = device_plot(title, rows, path), "device-" + slug(title)
        else:
            svg, name = shmem_plot(title, rows, path), slug(title)
        p = os.path.join(out, name + ".svg")
        with open(p, "w") as f:
            f.write(svg)
        written.append(p)
    for p in written:
        print(p)


if __name__ == "__main__":
    main()
