#!/usr/bin/env python3
"""LAMMPS's in.lj in OpenMM, for a side-by-side rate against cellint_lj on the same GPU.

The system is the one cellint_lj --cells N builds: an fcc lattice of N^3 unit cells at rho* = 0.8442
(4 N^3 atoms), LJ with sigma = epsilon = mass = 1 cut at 2.5 sigma without a shift, a switch or a
dispersion correction (LAMMPS lj/cut), T* = 1.44, dt = 0.005 tau. OpenMM's units map one to one: sigma =
1 nm, epsilon = 1 kJ/mol, mass = 1 amu, so tau = 1 ps and T* = 1.44 is 1.44 / k_B kelvin. The step-0
potential energy per atom is printed so that the systems can be compared (in.lj: -6.7733681).

    python3 benchmarks/peers/openmm_lj.py --cells 20 25 80 --precision single --json out.json
"""
import argparse
import json
import time

import openmm as mm
import openmm.unit as unit


def fcc(cells, density):
    a = (4.0 / density) ** (1.0 / 3.0)
    basis = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    pos = [((i + b[0]) * a, (j + b[1]) * a, (k + b[2]) * a)
           for k in range(cells) for j in range(cells) for i in range(cells) for b in basis]
    return pos, cells * a


def run(cells, precision, seconds, density=0.8442, temperature=1.44, cutoff=2.5, dt=0.005):
    pos, box = fcc(cells, density)
    n = len(pos)
    system = mm.System()
    system.setDefaultPeriodicBoxVectors(mm.Vec3(box, 0, 0), mm.Vec3(0, box, 0), mm.Vec3(0, 0, box))
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(mm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(cutoff)
    nb.setUseDispersionCorrection(False)
    nb.setUseSwitchingFunction(False)
    for _ in range(n):
        system.addParticle(1.0)
        nb.addParticle(0.0, 1.0, 1.0)
    system.addForce(nb)
    integrator = mm.VerletIntegrator(dt)
    platform = mm.Platform.getPlatformByName("CUDA")
    context = mm.Context(system, integrator, platform, {"Precision": precision})
    context.setPositions(pos)
    kelvin = temperature / unit.MOLAR_GAS_CONSTANT_R.value_in_unit(unit.kilojoule_per_mole / unit.kelvin)
    context.setVelocitiesToTemperature(kelvin, 87287)
    e0 = context.getState(getEnergy=True).getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / n
    integrator.step(200)  # warm-up (kernels compiled, neighbour list sized)
    context.getState(getEnergy=True)
    steps = 200
    while True:  # grow the run until it takes `seconds`
        t0 = time.perf_counter()
        integrator.step(steps)
        e = context.getState(getEnergy=True)
        dt_s = time.perf_counter() - t0
        if dt_s > seconds or steps >= 1 << 20:
            break
        steps = int(steps * max(2.0, 1.2 * seconds / max(dt_s, 1e-3)))
    rec = {"program": "openmm", "version": mm.__version__, "precision": precision, "atoms": n, "steps": steps,
           "seconds": dt_s, "steps_per_s": steps / dt_s, "atom_steps_per_s": n * steps / dt_s,
           "e_pair_step0": e0,
           "device": platform.getPropertyValue(context, "DeviceName")}
    print(json.dumps(rec), flush=True)
    del context, integrator
    return rec


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", type=int, nargs="+", default=[20, 25, 80])
    p.add_argument("--precision", default="single", choices=["single", "mixed", "double"])
    p.add_argument("--seconds", type=float, default=2.0, help="timed part of each run")
    p.add_argument("--json", help="write the records here")
    a = p.parse_args()
    recs = [run(c, a.precision, a.seconds) for c in a.cells]
    if a.json:
        with open(a.json, "w") as f:
            json.dump(recs, f, indent=1)


if __name__ == "__main__":
    main()
