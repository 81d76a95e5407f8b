#!/usr/bin/env python3
"""The build enforces the layers: with a layer's include root (build/layers/<layer>, made by
scripts/layer_links.py), a header of the layer itself or of a layer below compiles, and a
header of any layer above does not. Usage: check_layers.py BUILDDIR SRCDIR CC [ARGS...]"""
import os
import subprocess
import sys
import tempfile

build, src, cc = sys.argv[1], sys.argv[2], sys.argv[3:]
order = ['core', 'kernels', 'transport', 'topo', 'collectives', 'comm']
probe = {'core': 'core/log.h', 'kernels': 'kernels/reduce.h', 'transport': 'transport/endpoint.h',
         'topo': 'topo/topo.h', 'collectives': 'collectives/plan.h', 'comm': 'comm/comm_impl.h'}
failures = 0


def compiles(layer, header):
    with tempfile.NamedTemporaryFile('w', suffix='.c', delete=False) as f:
        f.write('#include "%s"\nint probe_;\n' % header)
    try:
        r = subprocess.run(cc + ['-std=c11', '-D_GNU_SOURCE', '-fsyntax-only', '-I' + os.path.join(src, 'include'),
                                 '-I' + os.path.join(build, 'layers', layer), f.name],
                           capture_output=True, text=True)
        return r.returncode == 0, r.stderr.strip().splitlines()[:1]
    finally:
        os.unlink(f.name)


for i, layer in enumerate(order):
    for j, other in enumerate(order):
        ok, why = compiles(layer, probe[other])
        if j <= i and not ok:
            print('FAIL: layer %s cannot include %s, a layer at or below it: %s' % (layer, probe[other], why))
            failures += 1
        elif j > i and ok:
            print('FAIL: layer %s can include %s from the layer above it (%s)' % (layer, probe[other], other))
            failures += 1
print('%d layer pairs checked, %d failures' % (len(order) ** 2, failures))
sys.exit(1 if failures else 0)
