#!/usr/bin/env python3
"""Draws the strategy diagrams of docs/strategies.md into docs/images/strategy_*.png, and the
layering of the library into docs/images/architecture.png.

    /usr/bin/python3 docs/diagrams.py            # writes every picture
    /usr/bin/python3 docs/diagrams.py binning    # only the ones whose name contains "binning"

Needs matplotlib and numpy (Debian: apt-get install python3-matplotlib python3-numpy); uses
the Agg backend, so no display is needed. Every picture is a small 2D example: cells are unit
squares, particles are dots drawn from a fixed seed, and cell numbering is x-fastest as in
cellint (a row of cells along X is one contiguous range of sorted particles).
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch, Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "images")

# One palette for every picture.
TARGET = "#f4b942"      # cells whose particles a block computes (targets)
GHOST = "#d9d9d9"       # ghost cells (sources only), drawn hatched
NEIGH = "#fbe3a6"       # neighbour cells read as sources
SHARED = "#6fa8dc"      # shared memory
REG = "#e06666"         # registers
GLOBAL = "#999999"      # global memory
DOT = "#333333"         # particles
BLOCKS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#76b7b2", "#edc948", "#9c755f"]

plt.rcParams.update({"font.size": 10, "axes.titlesize": 11.5, "axes.titleweight": "bold",
                     "legend.fontsize": 9, "legend.framealpha": 0.95})


# ---- helpers ------------------------------------------------------------------------------------

def particles(nx, ny, seed, lam, fixed=None):
    """Positions of the particles of every cell: dict (x, y) -> list of (px, py).
    `fixed` overrides the Poisson counts of some cells."""
    rng = np.random.RandomState(seed)
    counts = rng.poisson(lam, size=(ny, nx))
    for (x, y), c in (fixed or {}).items():
        counts[y, x] = c
    cells = {}
    for y in range(ny):
        for x in range(nx):
            pts = []
            for _ in range(counts[y, x]):
                pts.append((x + 0.15 + 0.7 * rng.rand(), y + 0.15 + 0.7 * rng.rand()))
            cells[(x, y)] = pts
    return cells


def sorted_slots(cells, nx, ny):
    """Sorted order (x-fastest cells): list of (cell, point), and cell_start."""
    order, start = [], [0]
    for y in range(ny):
        for x in range(nx):
            for p in cells[(x, y)]:
                order.append(((x, y), p))
            start.append(len(order))
    return order, start


def grid(ax, nx, ny, x0=0.0, y0=0.0, color="0.72", lw=0.7, labels=False):
    for i in range(nx + 1):
        ax.plot([x0 + i, x0 + i], [y0, y0 + ny], color=color, lw=lw, zorder=1)
    for j in range(ny + 1):
        ax.plot([x0, x0 + nx], [y0 + j, y0 + j], color=color, lw=lw, zorder=1)
    if labels:
        for i in range(nx):
            ax.text(x0 + i + 0.5, y0 - 0.22, str(i), ha="center", va="top", fontsize=8, color="0.4")
        for j in range(ny):
            ax.text(x0 - 0.2, y0 + j + 0.5, str(j), ha="right", va="center", fontsize=8, color="0.4")


def cell(ax, x, y, face, hatch=None, alpha=1.0, edge="0.35", lw=0.8, z=0.5, w=1, h=1):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, hatch=hatch, alpha=alpha,
                           lw=lw, zorder=z))


def outline(ax, x, y, w, h, color, lw=2.2, ls="-", z=4):
    ax.add_patch(Rectangle((x, y), w, h, fill=False, edgecolor=color, lw=lw, ls=ls, zorder=z))


def dots(ax, cells, color=DOT, size=14, z=3, only=None):
    for c, pts in cells.items():
        if only is not None and c not in only:
            continue
        if pts:
            xs, ys = zip(*pts)
            ax.scatter(xs, ys, s=size, color=color, zorder=z, linewidths=0)


def arrow(ax, a, b, color="0.2", lw=1.4, style="-|>", rad=0.0, z=6, ms=12, ls="-"):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle=style, mutation_scale=ms, color=color, lw=lw,
                                 connectionstyle=f"arc3,rad={rad}", zorder=z, linestyle=ls))


def box(ax, x, y, w, h, text, face, edge="0.25", fs=9, color="black", z=5, weight="normal", pad=0.02):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle=f"round,pad={pad}", facecolor=face, edgecolor=edge,
                                lw=1.0, zorder=z))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs, color=color, zorder=z + 1,
            weight=weight)


def blank(ax, xlim, ylim):
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")


def save(fig, name):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name)
    fig.savefig(path, dpi=110, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    print("wrote", os.path.relpath(path, os.path.dirname(HERE)))


def legend(ax, items, loc="upper left", ncol=1, anchor=None):
    handles = []
    for kind, label, style in items:
        if kind == "patch":
            handles.append(Patch(label=label, **style))
        else:
            handles.append(Line2D([], [], label=label, **style))
    kw = {"loc": loc, "ncol": ncol}
    if anchor:
        kw["bbox_to_anchor"] = anchor
    ax.legend(handles=handles, **kw)


# ---- binning ------------------------------------------------------------------------------------

def fig_binning():
    nx, ny = 4, 3
    # user order: particle i at pos[i]; chosen so that cells hold 0..3 particles
    pos = [(2.3, 1.6), (0.4, 0.3), (3.5, 2.2), (1.7, 1.2), (0.6, 1.7), (2.8, 0.5), (1.2, 1.8),
           (3.3, 2.7), (0.7, 0.7), (1.4, 1.4), (2.6, 2.4), (3.7, 0.6)]
    n = len(pos)
    cellof = [int(p[0]) + nx * int(p[1]) for p in pos]
    count = [0] * (nx * ny)
    rank = []
    for c in cellof:
        rank.append(count[c])
        count[c] += 1
    start = [0]
    for c in count:
        start.append(start[-1] + c)
    mc = max(count)
    order = sorted(range(n), key=lambda i: (cellof[i], rank[i]))

    fig = plt.figure(figsize=(14.5, 7.4))
    # (a) the grid
    ax = fig.add_axes([0.0, 0.38, 0.3, 0.56])
    grid(ax, nx, ny, labels=True)
    for y in range(ny):
        for x in range(nx):
            ax.text(x + 0.06, y + 0.94, f"c{x + nx * y}", fontsize=8, color="#1f5fa0", va="top")
    cell(ax, 0, 1, NEIGH, alpha=0.6, w=4, h=1, z=0.4)
    for i, p in enumerate(pos):
        ax.scatter([p[0]], [p[1]], s=30, color=DOT, zorder=3)
        ax.text(p[0] + 0.08, p[1] + 0.02, str(i), fontsize=9, zorder=4, color="#b22222", weight="bold")
    blank(ax, (-0.5, nx + 0.2), (-0.5, ny + 0.1))
    ax.set_title("(a) particles in user order, cells numbered x-fastest", loc="left")
    ax.text(2.0, -0.75, "cell = ix + nx * iy  (3D: + nx*ny*iz)\nrow iy = 1 (shaded) is one X-pencil",
            ha="center", va="top", fontsize=9)

    # (b)-(e) the arrays
    ax = fig.add_axes([0.32, 0.02, 0.68, 0.96])
    W = 0.95

    def strip(y, values, x0=0.0, face="white", label=None, hi=None, fmt=str, sub=None):
        for k, v in enumerate(values):
            f = face(k) if callable(face) else face
            ax.add_patch(Rectangle((x0 + k * W, y), W, 0.7, facecolor=f, edgecolor="0.3", lw=0.8))
            ax.text(x0 + k * W + W / 2, y + 0.35, fmt(v), ha="center", va="center", fontsize=9.5)
            if sub is not None:
                ax.text(x0 + k * W + W / 2, y - 0.12, sub(k), ha="center", va="top", fontsize=7.5, color="0.4")
        if label:
            ax.text(x0 - 0.2, y + 0.35, label, ha="right", va="center", fontsize=9.5)

    x0 = 3.4
    y = 10.6
    ax.text(x0 - 3.3, y + 1.25, "(b) step 1, one thread per particle: cell index; count[cell] += 1 (atomic,"
            " the old value is the rank in the cell)", fontsize=10.5, weight="bold")
    strip(y, list(range(n)), x0, face="#f3f3f3", label="particle i")
    strip(y - 0.9, cellof, x0, face="#dfe9f5", label="cell_of[i]")
    strip(y - 1.8, rank, x0, face="#eeeeee", label="rank[i]")

    y = 6.7
    ax.text(x0 - 3.3, y + 1.25, "(c) count per cell, then (d) exclusive scan (device-wide; CUB / rocPRIM on GPUs)"
            " = cell_start", fontsize=10.5, weight="bold")
    pencil = lambda k: NEIGH if 4 <= k < 8 else "white"  # noqa: E731
    strip(y, count, x0, face=pencil, label="count[c]", sub=lambda k: f"c{k}")
    strip(y - 1.05, start, x0, face=lambda k: NEIGH if 4 <= k <= 8 else "#dfe9f5", label="cell_start[c]",
          sub=lambda k: f"{k}")
    ax.text(x0 + 13 * W + 0.3, y + 0.35, f"M_C = max count = {mc}\n(atomic max; sizes the\nshared-memory strategies)",
            fontsize=9, va="center")

    y = 2.7
    ax.text(x0 - 3.3, y + 1.25, "(e) scatter: slot = cell_start[cell_of[i]] + rank[i]; positions, ids and"
            " attached attributes move together", fontsize=10.5, weight="bold")
    slot_cell = [cellof[i] for i in order]
    strip(y, order, x0, face=lambda k: NEIGH if 4 <= slot_cell[k] < 8 else "#f3f3f3",
          label="sorted slot -> id", sub=lambda k: f"{k}")
    strip(y - 1.05, slot_cell, x0, face=lambda k: NEIGH if 4 <= slot_cell[k] < 8 else "#dfe9f5",
          label="its cell")
    a, b = start[4], start[8]
    ax.annotate("", xy=(x0 + a * W, y - 1.55), xytext=(x0 + b * W, y - 1.55),
                arrowprops=dict(arrowstyle="<->", color="#b8860b", lw=1.6))
    ax.text(x0 + (a + b) * W / 2, y - 1.7, f"cells c4..c7 (row iy = 1, an X-pencil) = slots [{a}, {b}):"
            " one contiguous range", ha="center", va="top", fontsize=9.5, color="#7a5a00")
    ax.text(x0 - 3.3, -0.3, "Options: GridOptions::stable = true orders a cell by original index (a stable"
            " radix sort by cell instead of the atomic ranks).\nThe kernel of step 1 also flags non-finite"
            " positions and positions outside an open axis (NonFinitePosition, OutsideBox).",
            fontsize=9, va="top", color="0.25")
    ax.set_xlim(-0.2, x0 + 14 * W + 3.2)
    ax.set_ylim(-1.4, 12.4)
    ax.set_aspect("equal")
    ax.axis("off")
    save(fig, "strategy_binning.png")


# ---- Par-Part -----------------------------------------------------------------------------------

def fig_par_part():
    nx, ny = 8, 5
    cells = particles(nx, ny, 3, 1.6)
    order, start = sorted_slots(cells, nx, ny)
    per_block = 8  # drawn; the real block has 128 threads

    fig = plt.figure(figsize=(14, 6.6))
    ax = fig.add_axes([0.0, 0.12, 0.5, 0.8])
    grid(ax, nx, ny, labels=True)
    tcell = (3, 2)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            cell(ax, tcell[0] + dx, tcell[1] + dy, NEIGH, alpha=0.8)
    outline(ax, tcell[0] - 1, tcell[1] - 1, 3, 3, "#b8860b", lw=1.8, ls="--")
    for k, (c, p) in enumerate(order):
        ax.scatter([p[0]], [p[1]], s=22, color=BLOCKS[(k // per_block) % len(BLOCKS)], zorder=3)
    # the target and its sources
    tslot = start[tcell[0] + nx * tcell[1]]
    tp = order[tslot][1]
    ax.scatter([tp[0]], [tp[1]], s=180, marker="*", color=REG, edgecolor="black", zorder=6)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for p in cells[(tcell[0] + dx, tcell[1] + dy)]:
                if p != tp:
                    arrow(ax, p, tp, color="0.35", lw=0.8, style="-", z=2)
    circ = plt.Circle(tp, 1.0, fill=False, ls=":", color="#444444", lw=1.2, zorder=5)
    ax.add_patch(circ)
    blank(ax, (-0.6, nx + 0.3), (-0.6, ny + 0.3))
    ax.set_title("Par-Part: one thread per target particle", loc="left")
    legend(ax, [("line", "particle, coloured by the block whose thread owns it\n(8 threads a block drawn; 128 "
                 "in the code)", dict(marker="o", color=BLOCKS[0], ls="", markersize=6)),
                ("line", "one thread's target (in registers)", dict(marker="*", color=REG, ls="",
                                                                    markeredgecolor="black", markersize=12)),
                ("patch", "its 3^d neighbour cells: sources read\nfrom global memory (L1/L2)",
                 dict(facecolor=NEIGH, edgecolor="0.35")),
                ("line", "cutoff (cell width >= cutoff)", dict(color="#444444", ls=":"))],
           loc="upper left", anchor=(0.0, -0.02))

    # sorted array strip: threads map to consecutive slots, across cell boundaries
    ax = fig.add_axes([0.53, 0.35, 0.46, 0.55])
    n = len(order)
    W = min(0.5, 22.0 / n)
    for k in range(n):
        ax.add_patch(Rectangle((k * W, 0), W, 1, facecolor=BLOCKS[(k // per_block) % len(BLOCKS)],
                               edgecolor="white", lw=0.4))
    for c in range(nx * ny + 1):
        s = start[c]
        ax.plot([s * W, s * W], [-0.25, 1.25], color="black", lw=0.6)
    ax.text(0, 1.5, "sorted slots 0 .. N-1 (thin lines: cell boundaries, x-fastest cell order)",
            fontsize=9.5, va="bottom")
    for b in range((n + per_block - 1) // per_block):
        ax.text((b * per_block + per_block / 2) * W, -0.4, f"block {b}", ha="center", va="top",
                fontsize=7.5, rotation=90)
    ax.annotate("thread t = block x 128 + rank -> slot t\n(NoLoop: one pass; Loop: t += threads of the grid)",
                xy=(tslot * W + W / 2, 1.0), xytext=(tslot * W - 3, 3.2), fontsize=9.5,
                arrowprops=dict(arrowstyle="->", color="black"))
    ax.set_xlim(-0.3, n * W + 0.3)
    ax.set_ylim(-2.2, 4.2)
    ax.axis("off")

    ax = fig.add_axes([0.53, 0.02, 0.46, 0.3])
    ax.axis("off")
    ax.text(0, 1, "Per thread: registers hold x_t, the payload and the accumulator; the 3^d neighbour cells\n"
            "are found from x_t, their particles read from global memory. Neighbouring threads mostly\n"
            "share cells, so their loads hit the same cache lines. No shared memory, no barriers.\n"
            "Launch: 128 threads a block; NoLoop ceil(N / 128) blocks; Loop at most\n"
            "multiprocessors x (2048 / 128) blocks with a grid-stride loop.",
            va="top", fontsize=10)
    save(fig, "strategy_par_part.png")


# ---- Par-Cell / Par-Cell-SM ---------------------------------------------------------------------

def fig_par_cell():
    nx, ny = 7, 5
    cells = particles(nx, ny, 11, 2.0, fixed={(3, 2): 3, (4, 3): 7})
    tcell = (3, 2)
    fig = plt.figure(figsize=(14.5, 6.6))
    ax = fig.add_axes([0.0, 0.1, 0.4, 0.82])
    grid(ax, nx, ny, labels=True)
    k = 0
    visit = {}
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            k += 1
            visit[(tcell[0] + dx, tcell[1] + dy)] = k
            cell(ax, tcell[0] + dx, tcell[1] + dy, NEIGH, alpha=0.8)
    cell(ax, tcell[0], tcell[1], TARGET)
    for (x, y), v in visit.items():
        ax.text(x + 0.06, y + 0.94, str(v), fontsize=9, va="top", color="#7a5a00", weight="bold")
    dots(ax, cells)
    dots(ax, {tcell: cells[tcell]}, color=REG, size=40, z=5)
    for dy in (-1, 0, 1):
        ax.annotate("", xy=(tcell[0] - 1, tcell[1] + dy + 0.5), xytext=(tcell[0] + 2, tcell[1] + dy + 0.5),
                    arrowprops=dict(arrowstyle="<->", color="#7a5a00", lw=1.0, alpha=0.7), zorder=2)
    blank(ax, (-0.6, nx + 0.3), (-0.6, ny + 0.3))
    ax.set_title("Par-Cell: block b owns cell b (then b + blocks, ...)", loc="left")
    legend(ax, [("patch", "the block's target cell: thread i holds\nparticle i (i + 128, ...) in registers",
                 dict(facecolor=TARGET, edgecolor="0.35")),
                ("patch", "source cells, visited in the order 1..9\n(rows in y, x fastest)",
                 dict(facecolor=NEIGH, edgecolor="0.35")),
                ("line", "Par-Cell: a row of 3 cells = one contiguous\nslot range, read from global memory",
                 dict(color="#7a5a00", marker=">", markersize=5))],
           loc="upper left", anchor=(0.0, -0.01))

    # Par-Cell-SM: chunked staging timeline
    ax = fig.add_axes([0.43, 0.04, 0.57, 0.9])
    ax.set_title("Par-Cell-SM: each source cell staged through one shared buffer (512 particles)",
                 loc="left")
    ax.set_xlim(0, 20)
    ax.set_ylim(0, 13)
    ax.axis("off")
    # global memory column
    box(ax, 0.2, 11.0, 3.2, 1.2, "global memory\n(sorted SoA)", "#eeeeee")
    box(ax, 6.0, 11.0, 5.8, 1.2, "shared buffer: chunk <= 512 particles\n(Dim x 512 coordinates + payloads)",
        SHARED, color="black")
    box(ax, 14.0, 11.0, 5.6, 1.2, "registers of thread i: x_t, payload,\naccumulator (target i of the cell)",
        REG, color="white")
    arrow(ax, (3.5, 11.6), (5.9, 11.6))
    arrow(ax, (11.9, 11.6), (13.9, 11.6))
    ax.text(4.7, 11.75, "copy", ha="center", va="bottom", fontsize=8.5)
    ax.text(12.9, 11.75, "broadcast\nread", ha="center", va="bottom", fontsize=8.5)

    rows = [("source cell 1", 2, False), ("source cell 2", 1, False), ("...", 0, False),
            ("source cell 9 (7 particles;\nchunk = 4 drawn)", 7, True)]
    y = 9.6
    for name, npart, split in rows:
        if name == "...":
            ax.text(1.6, y + 0.25, "... (cells 3 to 8: the same two-barrier step each)", fontsize=9,
                    va="center", color="0.3")
            y -= 1.0
            continue
        chunks = [min(4, npart - s) for s in range(0, npart, 4)] if split else [npart]
        for ci, m in enumerate(chunks):
            label = name if ci == 0 else "  next chunk"
            ax.text(0.2, y + 0.35, label, fontsize=9, va="center")
            x = 5.0
            box(ax, x, y, 3.0, 0.7, f"all threads copy {m}", SHARED, fs=8.5)
            ax.plot([x + 3.3, x + 3.3], [y - 0.15, y + 0.85], color="black", lw=2.2)
            box(ax, x + 3.6, y, 5.0, 0.7, f"each target: {m} source{'s' if m > 1 else ''}", REG, fs=8.5,
                color="white")
            ax.plot([x + 8.9, x + 8.9], [y - 0.15, y + 0.85], color="black", lw=2.2)
            ax.text(x + 9.2, y + 0.35, "buffer free for\nthe next copy", fontsize=8, va="center", color="0.3")
            y -= 1.25
    ax.text(5.0 + 3.3, 10.55, "barrier", ha="center", fontsize=8.5)
    ax.text(5.0 + 8.9, 10.55, "barrier", ha="center", fontsize=8.5)
    ax.text(0.2, 3.0, "Per round of block-size targets: for each of the 3^d source cells, for each chunk:\n"
            "copy (image shift added once) -> barrier -> accumulate -> barrier: 2 barriers a chunk.\n"
            "Loop bounds come from cell_start only, so every thread reaches every barrier;\n"
            "threads without a target copy but do not compute. Empty source cells cost nothing.\n"
            "Launch (both): 128 threads, one block per cell (capped at the grid limit, then strided).\n"
            "Any M_C works: a crowded cell costs more rounds of targets and more chunks.",
            fontsize=9.5, va="top")
    save(fig, "strategy_par_cell.png")


# ---- All-in-SM ----------------------------------------------------------------------------------

def fig_all_in_sm():
    nx, ny = 11, 8
    cells = particles(nx, ny, 5, 1.8)
    order, start = sorted_slots(cells, nx, ny)
    sub = (3, 2)             # target cells per block (x, y)
    org = (3, 2)             # this block's sub-box origin
    fig = plt.figure(figsize=(15, 7.6))
    ax = fig.add_axes([0.0, 0.16, 0.45, 0.78])
    grid(ax, nx, ny, labels=True)
    # sub-box partition
    for bx in range(0, nx, sub[0]):
        for by in range(0, ny, sub[1]):
            outline(ax, bx, by, min(sub[0], nx - bx), min(sub[1], ny - by), "#8c8c8c", lw=1.0, ls="-", z=2)
    for x in range(org[0] - 1, org[0] + sub[0] + 1):
        for y in range(org[1] - 1, org[1] + sub[1] + 1):
            inside = org[0] <= x < org[0] + sub[0] and org[1] <= y < org[1] + sub[1]
            if inside:
                cell(ax, x, y, TARGET)
            else:
                cell(ax, x, y, GHOST, hatch="///")
    outline(ax, org[0] - 1, org[1] - 1, sub[0] + 2, sub[1] + 2, SHARED, lw=3.0)
    outline(ax, org[0], org[1], sub[0], sub[1], "#b8860b", lw=2.2)
    dots(ax, cells)
    for r in range(sub[1] + 2):
        y = org[1] - 1 + r
        ax.text(-0.55, y + 0.5, f"box row {r}", ha="right", va="center", fontsize=8.5,
                color="#1f5fa0", weight="bold")
    blank(ax, (-2.2, nx + 0.3), (-0.6, ny + 0.3))
    ax.set_title("All-in-SM: a block owns a sub-box (3 x 2 here) plus its ghost ring", loc="left")
    legend(ax, [("patch", "target cells of the block (sub-box)", dict(facecolor=TARGET, edgecolor="0.35")),
                ("patch", "ghost cells (sources only)", dict(facecolor=GHOST, edgecolor="0.35", hatch="///")),
                ("line", "everything inside is copied to shared memory once",
                 dict(color=SHARED, lw=3)),
                ("line", "sub-boxes of other blocks", dict(color="#8c8c8c", lw=1))],
           loc="upper left", anchor=(0.0, -0.01), ncol=2)

    # Figure-3 style local offsets
    ax = fig.add_axes([0.47, 0.02, 0.53, 0.92])
    ax.set_xlim(0, 22)
    ax.set_ylim(0, 15)
    ax.axis("off")
    ax.set_title("Local offsets (the paper's Figure 3): one count per X-row, one block prefix sum",
                 loc="left")
    headers = ["box row", "global cells", "cell_start\nof 1st cell", "cell_start\nafter last",
               "particles\n(difference)", "exclusive\nscan = start\nin shared mem"]
    xs = [0.2, 2.6, 6.4, 9.4, 12.4, 15.6]
    y = 13.2
    for h, x in zip(headers, xs):
        ax.text(x, y, h, fontsize=9, va="center", weight="bold")
    counts, firsts = [], []
    x_lo, x_hi = org[0] - 1, org[0] + sub[0]  # inclusive
    run = 0
    for r in range(sub[1] + 2):
        gy = org[1] - 1 + r
        c0 = x_lo + nx * gy
        c1 = x_hi + nx * gy
        g0, g1 = start[c0], start[c1 + 1]
        counts.append(g1 - g0)
        firsts.append(g0)
        yy = 11.6 - 1.1 * r
        vals = [f"row {r}", f"c{c0} .. c{c1}", str(g0), str(g1), f"{g1 - g0}", str(run)]
        for v, x in zip(vals, xs):
            face = "#dfe9f5" if x == xs[-1] else None
            if face:
                ax.add_patch(Rectangle((x - 0.15, yy - 0.38), 2.2, 0.76, facecolor=SHARED, alpha=0.35,
                                       edgecolor="none"))
            ax.text(x, yy, v, fontsize=9.5, va="center")
        run += g1 - g0
    ax.text(0.2, 11.6 - 1.1 * (sub[1] + 2) + 0.15,
            f"The cells of a box row are contiguous in global memory (x-fastest), so a row's count is the\n"
            f"difference of two global offsets; scanned total = {run} particles in shared memory "
            f"(capacity M_C x {(sub[0] + 2) * (sub[1] + 2)} cells).\n"
            f"The same in-place scan also takes one count per target row (TR = {sub[1]} more entries): "
            f"it numbers the targets.", fontsize=9, va="top")
    # the local offset formula
    ax.text(0.2, 5.9, "local start of cell x in row r = scan[r] + (cell_start[cell] - cell_start[first cell of row r])\n"
            "(a ghost wrapped across a periodic X face is a separate one-cell range of the row)",
            fontsize=9.5, va="top", family="monospace")
    # shared-memory layout bar
    parts = [("scan\nR+TR+1", 1.5, "#c9daf8"), ("rows\nR records", 2.0, "#c9daf8"),
             ("cstart\nR x (w_x+1)", 2.6, "#c9daf8"), ("positions, image shift added\nDim x capacity", 7.4, SHARED),
             ("payload\ncapacity", 3.4, "#a4c2f4")]
    x = 0.2
    ax.text(0.2, 3.3, "shared memory of the block (each section 16-byte aligned):", fontsize=9.5, va="bottom")
    for label, w, face in parts:
        ax.add_patch(Rectangle((x, 1.55), w, 1.3, facecolor=face, edgecolor="0.3"))
        ax.text(x + w / 2, 2.2, label, ha="center", va="center", fontsize=8.5)
        x += w
    ax.text(0.2, 1.25, "Phases: 1 row setup + counts -> barrier; 2 block exclusive scan (2h-2 barriers);\n"
            "3 local offsets + copy of the box -> barrier; 4 each thread: targets, 3^(d-1) neighbour rows, "
            "3 cells = 1 range.", fontsize=9, va="top")
    save(fig, "strategy_all_in_sm.png")


# ---- X-pencil -----------------------------------------------------------------------------------

def fig_x_pencil():
    nx, ny = 10, 5
    cells = particles(nx, ny, 8, 1.6)
    y0, x0, L = 2, 3, 4
    fig = plt.figure(figsize=(15, 6.6))
    ax = fig.add_axes([0.0, 0.14, 0.45, 0.8])
    grid(ax, nx, ny, labels=True)
    order = {0: (y0, "1: own row (targets)"), 1: (y0 + 1, "2: row y+1"), 2: (y0 - 1, "3: row y-1")}
    for k, (yy, lab) in order.items():
        for x in range(x0 - 1, x0 + L + 1):
            ghost = x in (x0 - 1, x0 + L)
            if yy == y0 and not ghost:
                cell(ax, x, yy, TARGET)
            elif ghost:
                cell(ax, x, yy, GHOST, hatch="///")
            else:
                cell(ax, x, yy, NEIGH)
        outline(ax, x0 - 1, yy, L + 2, 1, SHARED, lw=2.6)
        ax.text(nx + 0.2, yy + 0.5, lab, fontsize=9.5, va="center", color="#1f5fa0", weight="bold")
    dots(ax, cells)
    dots(ax, {(x, y0): cells[(x, y0)] for x in range(x0, x0 + L)}, color=REG, size=36, z=5)
    ax.annotate("", xy=(x0 - 1, ny + 0.25), xytext=(x0 + L + 1, ny + 0.25),
                arrowprops=dict(arrowstyle="<->", color="black", lw=1.0))
    ax.text(x0 + L / 2, ny + 0.35, "one pencil: L = 4 target cells + 2 ghost cells", ha="center", va="bottom",
            fontsize=9)
    blank(ax, (-0.6, nx + 3.4), (-0.6, ny + 0.9))
    ax.set_title("X-pencil: a block owns L cells of one X-row", loc="left")
    legend(ax, [("patch", "target cells; their particles sit in registers,\none target per thread",
                 dict(facecolor=TARGET, edgecolor="0.35")),
                ("line", "target particles (registers)", dict(marker="o", color=REG, ls="", markersize=6)),
                ("patch", "ghost cells at the pencil ends", dict(facecolor=GHOST, edgecolor="0.35", hatch="///")),
                ("line", "one staged pencil in shared memory\n(3 in 2D, 9 in 3D, one after another)",
                 dict(color=SHARED, lw=2.6))],
           loc="upper left", anchor=(0.0, -0.01), ncol=2)

    ax = fig.add_axes([0.48, 0.03, 0.52, 0.9])
    ax.set_xlim(0, 22)
    ax.set_ylim(0, 14)
    ax.axis("off")
    ax.set_title("Streaming the pencils (two shared buffers, one barrier a pencil)", loc="left")
    steps = [("own row", "A"), ("row y+1", "B"), ("row y-1", "A")]
    y = 12.0
    for i, (name, buf) in enumerate(steps):
        box(ax, 0.2, y, 4.2, 0.8, f"load {name}\n-> registers (prefetch)", "#eeeeee", fs=8.5)
        if i > 0:
            box(ax, 4.8, y, 5.2, 0.8, f"compute on {steps[i - 1][0]}\n(buffer {steps[i - 1][1]})", REG, fs=8.5,
                color="white")
        box(ax, 10.4, y, 4.4, 0.8, f"store into buffer {buf}\n(+ cell boundaries)", SHARED, fs=8.5)
        ax.plot([15.2, 15.2], [y - 0.15, y + 0.95], color="black", lw=2.2)
        ax.text(15.45, y + 0.4, "barrier", fontsize=8.5, va="center")
        if i == 0:
            ax.text(16.8, y + 0.4, "then each thread reads\nits own target from it", fontsize=8.5, va="center",
                    color="0.3")
        y -= 1.35
    box(ax, 4.8, y, 5.2, 0.8, "compute on row y-1\n(buffer A)", REG, fs=8.5, color="white")
    ax.text(10.4, y + 0.4, "write out[t]", fontsize=9, va="center")
    # window picture
    ax.text(0.2, 6.3, "In every staged pencil a target in local cell k reads one window:", fontsize=9.5)
    xs = 0.6
    labels = ["ghost\nx0-1", "x0", "x0+1", "x0+2", "x0+3", "ghost\nx0+4"]
    for k, lab in enumerate(labels):
        face = GHOST if k in (0, 5) else SHARED
        ax.add_patch(Rectangle((xs + k * 2.4, 4.2), 2.4, 1.0, facecolor=face, edgecolor="0.3",
                               hatch="///" if k in (0, 5) else None, alpha=0.8))
        ax.text(xs + k * 2.4 + 1.2, 4.7, lab, ha="center", va="center", fontsize=8.5)
    ax.annotate("", xy=(xs + 1 * 2.4, 3.95), xytext=(xs + 4 * 2.4, 3.95),
                arrowprops=dict(arrowstyle="<->", color=REG, lw=1.8))
    ax.text(xs + 2.5 * 2.4, 3.8, "target in cell x0+1: sources [starts[k-1], starts[k+2]) = cells x0..x0+2",
            ha="center", va="top", fontsize=8.5, color=REG)
    ax.text(0.2, 2.6, "Threads map to the pencil's targets (consecutive slots); ghosts are copied by a strided\n"
            "loop. More targets than threads: several passes over the 3^(d-1) rows. One buffer when two\n"
            "do not fit: a second barrier before each overwrite. Image shifts are added while staging.",
            fontsize=9.5, va="top")
    save(fig, "strategy_x_pencil.png")


# ---- X-pencil-reg -------------------------------------------------------------------------------

def fig_x_pencil_reg():
    nx, ny = 10, 6
    cells = particles(nx, ny, 21, 1.5)
    x0, y0, Sx, Sy = 3, 2, 4, 2
    fig = plt.figure(figsize=(15, 6.9))
    ax = fig.add_axes([0.0, 0.16, 0.45, 0.78])
    grid(ax, nx, ny, labels=True)
    for r, yy in enumerate(range(y0 - 1, y0 + Sy + 1)):
        for x in range(x0 - 1, x0 + Sx + 1):
            ghost = x in (x0 - 1, x0 + Sx) or yy in (y0 - 1, y0 + Sy)
            if ghost:
                cell(ax, x, yy, GHOST, hatch="///")
            else:
                cell(ax, x, yy, TARGET)
        outline(ax, x0 - 1, yy, Sx + 2, 1, SHARED, lw=2.2)
        ax.text(nx + 0.2, yy + 0.5, f"pencil {r + 1}", fontsize=9.5, va="center", color="#1f5fa0",
                weight="bold")
    outline(ax, x0, y0, Sx, Sy, "#b8860b", lw=2.4)
    dots(ax, cells)
    tgt = {(x, y): cells[(x, y)] for x in range(x0, x0 + Sx) for y in range(y0, y0 + Sy)}
    dots(ax, tgt, color=REG, size=36, z=5)
    blank(ax, (-0.6, nx + 0.3), (-0.6, ny + 0.3))
    ax.set_xlim(-0.6, nx + 1.8)
    ax.set_title("X-pencil-reg: a block owns an Sx x Sy sub-box (4 x 2 drawn)", loc="left")
    legend(ax, [("patch", "target sub-box: particles in registers\n(x_pencil_reg_targets per thread)",
                 dict(facecolor=TARGET, edgecolor="0.35")),
                ("line", "target particles (registers)", dict(marker="o", color=REG, ls="", markersize=6)),
                ("patch", "ghost layer (sources only, from global)",
                 dict(facecolor=GHOST, edgecolor="0.35", hatch="///")),
                ("line", "pencil of Sx + 2 cells staged in shared\nmemory, streamed 1, 2, 3, 4",
                 dict(color=SHARED, lw=2.2))],
           loc="upper left", anchor=(0.0, -0.01), ncol=2)

    ax = fig.add_axes([0.48, 0.03, 0.52, 0.9])
    ax.set_xlim(0, 22)
    ax.set_ylim(0, 14)
    ax.axis("off")
    ax.set_title("Per pencil: where the staged particles come from, who computes", loc="left")
    hdr = ["pencil", "ghost cells", "target cells", "target rows computing"]
    xs = [0.2, 2.4, 6.8, 13.6]
    for h, x in zip(hdr, xs):
        ax.text(x, 12.6, h, fontsize=9.5, weight="bold", va="center")
    rows = [("1 (y0-1)", "global", "global (ghost row)", "row y0 only (row y0+1 idle)"),
            ("2 (y0)", "global", "registers -> shared", "rows y0 and y0+1"),
            ("3 (y0+1)", "global", "registers -> shared", "rows y0 and y0+1"),
            ("4 (y0+2)", "global", "global (ghost row)", "row y0+1 only (row y0 idle)")]
    y = 11.6
    for vals in rows:
        for v, x in zip(vals, xs):
            color = REG if "registers" in v else ("0.3" if "global" in v else "black")
            ax.text(x, y, v, fontsize=9.5, va="center", color=color,
                    weight="bold" if "registers" in v else "normal")
        y -= 0.95
    # register -> shared arrow picture
    box(ax, 0.4, 5.6, 5.6, 1.1, "registers of the block\n(this pass's targets)", REG, color="white")
    box(ax, 8.6, 5.6, 5.6, 1.1, "shared buffer\n(pencil of a sub-box row)", SHARED)
    box(ax, 16.4, 5.6, 5.2, 1.1, "global memory\n(ghosts, outer rows)", "#eeeeee")
    arrow(ax, (6.1, 6.15), (8.5, 6.15), color=REG, lw=2.0)
    arrow(ax, (16.3, 6.15), (14.3, 6.15), color="0.35", lw=1.6)
    ax.text(7.3, 6.35, "written by\nthe owners", ha="center", va="bottom", fontsize=8.5, color=REG)
    ax.text(15.3, 6.35, "copied", ha="center", va="bottom", fontsize=8.5)
    ax.text(0.2, 4.6, "The paper's point: a source that is also a target of the block is never read from\n"
            "global memory twice; it comes from the registers that already hold it.\n"
            "Targets of a sub-box row are one contiguous slot range; row offsets live in shared memory.\n"
            "Barriers: one per pencil with two buffers (two with one); idle threads still reach them.\n"
            "Sub-box: one row (Sy = Sz = 1) by default, more rows through Tuning::subbox (as drawn);\n"
            "Sx chosen like X-pencil's L (expected targets of 512 threads, shared-memory budget,\n"
            "4 sub-boxes per multiprocessor).", fontsize=9.5, va="top")
    save(fig, "strategy_x_pencil_reg.png")


# ---- architecture -------------------------------------------------------------------------------

def fig_architecture():
    """The layers one interaction call goes through (include/cellint/), top to bottom."""
    fig = plt.figure(figsize=(11, 7))
    ax = fig.add_axes([0.0, 0.0, 1.0, 0.95])
    blank(ax, (-1.3, 22.6), (-0.1, 14.0))
    ax.set_title("cellint's layers: one interaction call, top to bottom (include/cellint/)", loc="left")
    LIGHT = "#c9daf8"
    CALL = "#1f5fa0"

    # front door, Auto, run.hpp
    box(ax, 1.6, 12.9, 13.3, 0.75, "interact.hpp, the front door\ninteract(grid, f, out)   |   "
        "interact(targets, sources, f, out)   |   interact_with(kind, ...)", TARGET, fs=8.5, weight="bold")
    box(ax, 3.7, 11.75, 9.1, 0.6, "tune/ Autotuner (Auto): times auto_candidates(), caches the winner",
        NEIGH, fs=8)
    box(ax, 1.0, 10.2, 14.5, 0.95, "strategies/run.hpp: detail::run_kind(kind, call), make_call(targets, "
        "sources)\nthe only place a strategy's \"no\" becomes an Unsupported exception", REG, fs=8.5,
        color="white")
    arrow(ax, (8.25, 12.85), (8.25, 12.4))
    arrow(ax, (8.25, 11.7), (8.25, 11.2))
    arrow(ax, (3.4, 12.85), (3.4, 11.2))
    ax.text(3.25, 12.05, "kind named", ha="right", va="center", fontsize=7.5, color="0.3")
    ax.text(8.4, 11.45, "the winner's kind", ha="left", va="center", fontsize=7.5, color="0.3")

    # registry and the Call object
    box(ax, 0.0, 8.5, 10.6, 0.95, "strategies/registry.hpp\nAllStrategies = TypeList<ParPartNoLoop, ..., "
        "BruteForce>\n-> to_string / strategy_from_name / dispatch / strategies_for<B> / auto_candidates",
        LIGHT, fs=7.5)
    box(ax, 11.3, 8.5, 5.2, 0.95, "Call<B, R, D>\n{ PairViews {targets, sources, same},\nstream, device props }",
        "#dfe9f5", edge=CALL, fs=7.5, color=CALL)
    ax.patches[-1].set_linestyle("--")
    ax.patches[-1].set_linewidth(1.6)
    arrow(ax, (5.3, 10.15), (5.3, 9.5))
    ax.text(5.45, 9.82, "dispatch(kind)", fontsize=7.5, va="center", color="0.3")
    arrow(ax, (13.9, 10.15), (13.9, 9.5), color=CALL)
    ax.text(14.05, 9.82, "built once a call", fontsize=7.5, va="center", color=CALL)

    # strategies: header over detail, one column each
    names = ["par_part", "par_cell", "cell_loop", "all_in_sm", "x_pencil", "x_pencil_reg", "x_pencil_tile",
             "brute_force"]
    pitch, w = 2.07, 1.9
    cx = {n: 0.95 + pitch * i for i, n in enumerate(names)}
    ax.text(0.0, 8.12, "strategies/<name>.hpp: tag + policy (defaults, candidates())", fontsize=8,
            va="center", weight="bold")
    ax.text(0.0, 7.8, "over strategies/detail/<name>/: plan() once per call, run(), kernel", fontsize=8,
            va="center", weight="bold")
    for i, n in enumerate(names):
        x = cx[n] - w / 2
        box(ax, x, 6.6, w, 0.55, f"{n}\ntag + policy", BLOCKS[i], fs=7.2,
            color="black" if i in (5, 6) else "white")
        ax.add_patch(FancyBboxPatch((x, 5.55), w, 0.9, boxstyle="round,pad=0.02", facecolor=BLOCKS[i],
                                    alpha=0.25, edgecolor="0.25", lw=1.0, zorder=5))
        ax.text(cx[n], 6.0, f"detail/\n{n}/\nplan, run, kernel", ha="center", va="center", fontsize=7,
                zorder=6)
        arrow(ax, (cx[n], 7.37), (cx[n], 7.2), color=CALL, ms=8, lw=1.0)
    # the Call handed down to every plan()/run(): a bus over the header row
    ax.plot([cx[names[0]], 13.9], [7.37, 7.37], color=CALL, lw=1.3, ls="--", zorder=4)
    ax.plot([13.9, cx[names[-1]]], [7.37, 7.37], color=CALL, lw=1.3, ls="--", zorder=4)
    ax.plot([13.9, 13.9], [8.45, 7.37], color=CALL, lw=1.3, ls="--", zorder=4)
    ax.text(14.05, 7.93, "handed to every\nplan() / run();\nstrategies never\nsee the CellGrid", fontsize=7,
            va="center", color=CALL)
    arrow(ax, (10.0, 8.45), (10.0, 7.2))
    ax.text(10.15, 8.12, "picks one", fontsize=7.5, va="center", color="0.3")

    # the shared building blocks in strategies/detail/
    blocks = {"neighbors": (0.0, 4.7, "strategies/detail/neighbors.hpp\nwrap_axis (the one periodic wrap)\n"
                            "neighbor_row, for_each_neighbor_range,\naccumulate_neighbors,\nlast_le (cell search)\n"
                            "(builds on pairs.hpp)"),
              "block_scan": (4.9, 1.9, "primitives/\nblock_scan.hpp\nblock prefix\nsum"),
              "pencil": (7.0, 5.25, "strategies/detail/pencil.hpp\nStagedParticle, PencilCopy\n"
                         "(staging rows / pencils)\nPencilFit, pencil_balance\n(builds on neighbors.hpp)"),
              "pairs": (12.45, 4.05, "strategies/detail/pairs.hpp\naccumulate_pair (the one pair term)\n"
                        "accumulate / accumulate_around /\naccumulate_except\nGlobalSources, SoaSources,\n"
                        "staged records")}
    by, bh = 3.55, 1.55
    for k, (x, bw, text) in blocks.items():
        box(ax, x, by, bw, bh, text, "#eeeeee", fs=7.2)
    uses = [("par_part", "neighbors", 0), ("par_cell", "neighbors", 0), ("cell_loop", "neighbors", -1.1),
            ("all_in_sm", "neighbors", -2.6), ("all_in_sm", "block_scan", -1.05), ("x_pencil", "pencil", 0),
            ("x_pencil_reg", "pencil", 0), ("x_pencil_tile", "pencil", -1.4), ("brute_force", "pairs", 0)]
    for s, b, dx in uses:
        arrow(ax, (cx[s], 5.5), (cx[s] + dx, by + bh + 0.05), color="0.35", lw=1.1, ms=10)

    # grid, backend, core
    box(ax, 0.0, 2.65, 22.5, 0.6, "grid/ CellGrid<B, R, D>: binning, sorted SoA, attributes  ->  view()  "
        "->  GridView", NEIGH, fs=8.5)
    ax.plot([-0.02, -0.75, -0.75], [2.95, 2.95, 10.67], color=CALL, lw=1.4, zorder=4)
    arrow(ax, (-0.75, 10.67), (0.95, 10.67), color=CALL)
    ax.text(-0.9, 6.8, "view() -> GridView -> PairViews", rotation=90, ha="center", va="center",
            fontsize=7.5, color=CALL)
    ax.add_patch(FancyBboxPatch((0.0, 0.05), 15.6, 2.3, boxstyle="round,pad=0.02", facecolor=GHOST,
                                edgecolor="0.25", lw=1.0, zorder=4))
    ax.text(0.2, 2.1, "backend/", fontsize=8.5, weight="bold", va="center", zorder=6)
    box(ax, 0.3, 0.25, 2.4, 1.55, "Host", "white", fs=8)
    box(ax, 3.0, 0.25, 3.1, 1.55, "Emulated\n(GPU kernels\non the CPU)", "white", fs=8)
    box(ax, 6.4, 1.4, 4.3, 0.4, "Cuda", "white", fs=8)
    box(ax, 11.0, 1.4, 4.3, 0.4, "Hip", "white", fs=8)
    box(ax, 6.4, 0.83, 8.9, 0.4, "one GPU body: detail/gpu/backend.hpp", "white", fs=7.5)
    box(ax, 6.4, 0.25, 4.3, 0.4, "detail/cuda/runtime.hpp", "white", fs=7.5)
    box(ax, 11.0, 0.25, 4.3, 0.4, "detail/hip/runtime.hpp", "white", fs=7.5)
    ax.text(15.3, 2.1, "Cuda + Hip = one GPU body over their runtimes", ha="right", va="center",
            fontsize=7.5, zorder=6)
    box(ax, 16.0, 0.05, 6.5, 2.3, "core/\nVec, Box, GridGeometry, errors", GHOST, fs=8.5)

    # inset: targets and sources
    px, py, pw, ph = 17.1, 3.55, 5.4, 10.1
    ax.add_patch(FancyBboxPatch((px, py), pw, ph, boxstyle="round,pad=0.02", facecolor="#fafafa",
                                edgecolor="0.5", lw=1.0, zorder=0.2))
    ax.text(px + 0.15, py + ph - 0.3, "targets and sources", fontsize=10, weight="bold", va="center")
    s = 0.8
    rng = np.random.RandomState(7)
    sets = []
    for g, (gx, face, lab) in enumerate([(px + 0.2, TARGET, "target set"), (px + 2.8, SHARED, "source set")]):
        gy = py + ph - 3.65
        for i in range(4):
            ax.plot([gx + i * s, gx + i * s], [gy, gy + 3 * s], color="0.6", lw=0.7, zorder=1)
            ax.plot([gx, gx + 3 * s], [gy + i * s, gy + i * s], color="0.6", lw=0.7, zorder=1)
        ax.text(gx + 1.5 * s, gy + 3 * s + 0.2, lab, ha="center", va="bottom", fontsize=8.5, weight="bold",
                color="#b8860b" if g == 0 else CALL)
        pts = gx + 0.1 * s + 2.8 * s * rng.rand(9), gy + 0.1 * s + 2.8 * s * rng.rand(9)
        ax.scatter(*pts, s=26, color=face, edgecolor="0.2", linewidths=0.6, zorder=3)
        sets.append(list(zip(*pts)))
    mid = (px + 0.2 + 1.5 * s, py + ph - 3.65 + 1.5 * s)
    t = min(sets[0], key=lambda q: (q[0] - mid[0]) ** 2 + (q[1] - mid[1]) ** 2)
    ax.scatter([t[0]], [t[1]], s=70, color=TARGET, edgecolor=REG, linewidths=1.6, zorder=4)
    for q in sorted(sets[1])[:3]:
        arrow(ax, q, t, color="0.4", lw=0.8, rad=0.25, ms=8, z=2)
    ax.text(px + 0.15, py + ph - 3.95,
            "Two views over one cell geometry:\nPairViews {targets, sources, same}.\n\n"
            "A target skips a source only when\nsame set and same slot\n(PairViews::excluded).\n\n"
            "interact(grid, f, out): one set,\nsame = true: skips only itself.\n\n"
            "interact(T, S, f, out): two sets,\nsame = false: skips nothing.",
            fontsize=8.5, va="top", linespacing=1.45)
    save(fig, "architecture.png")


FIGURES = {"binning": fig_binning, "par_part": fig_par_part, "par_cell": fig_par_cell,
           "all_in_sm": fig_all_in_sm, "x_pencil": fig_x_pencil, "x_pencil_reg": fig_x_pencil_reg,
           "architecture": fig_architecture}

if __name__ == "__main__":
    want = sys.argv[1:]
    for name, fn in FIGURES.items():
        if not want or any(w in name for w in want):
            fn()
