#!/usr/bin/env python3
"""Every ORBIT_* setting of liborbit is read through the registry (core/param.h): no layer
calls getenv on an ORBIT_ name itself. Usage: check_settings_read.py SRCDIR"""
import os
import re
import sys

src = sys.argv[1]
layers = ['core', 'kernels', 'transport', 'topo', 'collectives', 'comm']
allowed = {'core/param.c'}
pattern = re.compile(r'getenv\s*\(\s*"ORBIT_')
found = 0
for layer in layers:
    for root, _, files in os.walk(os.path.join(src, layer)):
        for name in sorted(files):
            if not name.endswith(('.c', '.h', '.cu', '.cuh', '.cc')):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            if rel in allowed:
                continue
            with open(path, errors='replace') as f:
                for n, line in enumerate(f, 1):
                    if pattern.search(line):
                        print('FAIL: %s:%d reads an ORBIT_ variable with getenv: declare it in core/param.h '
                              'and use orb_param_num/orb_param_str' % (rel, n))
                        found += 1
print('%d reads of ORBIT_ variables outside the registry' % found)
sys.exit(1 if found else 0)
