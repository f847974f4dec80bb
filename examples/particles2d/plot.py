#!/usr/bin/env python3
"""Snapshot of a cellint_particles2d trajectory (the course's format: a line 'n size', then 'x y' per particle per
saved frame): the particles of one frame in the box, and the first frame's beside it.

    cellint_particles2d --n 2000 --steps 1000 --save-every 100 -o traj.txt
    python3 examples/particles2d/plot.py traj.txt [-o docs/images/particles2d_snapshot.png] [--frame -1]
"""
import argparse
import sys

try:
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot.py needs matplotlib (e.g. apt-get install python3-matplotlib)")


def read_frames(path):
    """Returns n, size and the frames, each a pair of coordinate lists."""
    with open(path) as f:
        head = f.readline().split()
        if len(head) != 2:
            sys.exit(f"{path}: the first line should be 'n size'")
        n, size = int(head[0]), float(head[1])
        frames, xs, ys = [], [], []
        for line in f:
            x, y = line.split()
            xs.append(float(x))
            ys.append(float(y))
            if len(xs) == n:
                frames.append((xs, ys))
                xs, ys = [], []
    if not frames:
        sys.exit(f"{path}: no complete frame")
    return n, size, frames


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trajectory")
    ap.add_argument("-o", "--output", default="docs/images/particles2d_snapshot.png")
    ap.add_argument("--frame", type=int, default=-1, help="frame to show on the right (default: the last)")
    ap.add_argument("--save-every", type=int, default=None, help="steps between frames, for the titles")
    a = ap.parse_args()
    n, size, frames = read_frames(a.trajectory)
    index = a.frame if a.frame >= 0 else len(frames) + a.frame
    if not 0 <= index < len(frames):
        sys.exit(f"--frame {a.frame}: the file has {len(frames)} frames")

    def title(i):
        return f"frame {i}" + (f" (after {i * a.save_every + 1} steps)" if a.save_every else "")

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.2))
    # a marker about the cutoff's size (0.01) on the box's scale, so that close pairs look close
    marker = max(0.5, (0.01 / size * 5.2 * 72) ** 2 / 4)
    for ax, i in zip(axes, (0, index)):
        xs, ys = frames[i]
        ax.scatter(xs, ys, s=marker, c="tab:blue", linewidths=0)
        ax.set_xlim(0, size)
        ax.set_ylim(0, size)
        ax.set_aspect("equal")
        ax.set_title(title(i))
        ax.set_xticks([0, size])
        ax.set_yticks([0, size])
    fig.suptitle(f"cellint particles2d (CS267): {n} particles, box {size:.4g}, cutoff 0.01")
    fig.tight_layout()
    fig.savefig(a.output, dpi=110)
    print(f"wrote {a.output} ({len(frames)} frames read)")


if __name__ == "__main__":
    main()
