"""The documented example runs: a small melt conserves energy and writes its plot."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "melt_rdf.py"


def test_melt_example_conserves_energy(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "rdf.png"
    out = subprocess.run([sys.executable, str(EXAMPLE), "--cells", "7", "--steps", "200", "--png", str(png)],
                         capture_output=True, text=True, check=True).stdout
    energies = [float(line.split("E/N =")[1].split()[0]) for line in out.splitlines() if "E/N =" in line]
    assert len(energies) == 2 and abs(energies[-1] - energies[0]) < 1e-2, out
    assert png.stat().st_size > 10_000
