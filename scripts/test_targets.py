#!/usr/bin/env python3
"""The ninja targets the tests of some suites need, as `meson test --suite ...` would build them.

    scripts/test_targets.py BUILDDIR [--suite S]... [--no-suite S]... [--test NAME]...

Prints one path a line, relative to BUILDDIR, from meson's introspection (intro-tests.json:
every test's `depends`, which holds its program and what it runs). scripts/test.sh builds
them ahead of a stage, in the background, so that the stage's `meson test` finds nothing left
to build. A target missed here is no error: `meson test` builds it when the stage runs.
"""
import json
import os
import sys


def main(argv):
    if not argv or argv[0].startswith('-'):
        sys.exit(__doc__.strip())
    builddir, rest = argv[0], argv[1:]
    want, skip, names = set(), set(), set()
    while rest:
        flag, value, rest = rest[0], rest[1] if len(rest) > 1 else None, rest[2:]
        if value is None or flag not in ('--suite', '--no-suite', '--test'):
            sys.exit(f'test_targets.py: unknown argument {flag!r} (or no value after it)')
        {'--suite': want, '--no-suite': skip, '--test': names}[flag].add(value)
    info = os.path.join(builddir, 'meson-info')
    with open(os.path.join(info, 'intro-tests.json')) as f:
        tests = json.load(f)
    with open(os.path.join(info, 'intro-targets.json')) as f:
        files = {t['id']: t['filename'] for t in json.load(f)}
    root = os.path.abspath(builddir)
    out = []
    for t in tests:
        suites = {s.split(':', 1)[-1] for s in t['suite']}  # "orbit:gpu" -> "gpu"
        # selected by name, or by suite (all when neither is given) unless --no-suite drops it
        by_suite = (not want and not names) or bool(suites & want)
        if t['name'] not in names and (not by_suite or suites & skip):
            continue
        for dep in t['depends']:
            for path in files.get(dep, []):
                rel = os.path.relpath(path, root)
                if rel not in out:
                    out.append(rel)
    if not out:  # an empty list would have ninja build everything
        sys.exit('test_targets.py: no test selected in ' + builddir)
    print('\n'.join(out))


if __name__ == '__main__':
    main(sys.argv[1:])
