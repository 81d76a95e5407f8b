#!/usr/bin/env python3
"""docs/env.md is what `orbit-info --markdown` prints (the settings registry, core/param.h), so
it cannot go stale. Usage: check_env_doc.py ORBIT_INFO DOCS_ENV_MD"""
import difflib
import subprocess
import sys

tool, doc = sys.argv[1], sys.argv[2]
want = subprocess.run([tool, '--markdown'], capture_output=True, text=True, check=True).stdout
with open(doc) as f:
    have = f.read()
if have != want:
    sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True), doc,
                                               'orbit-info --markdown'))
    print('FAIL: %s differs from the registry; regenerate it: build/tools/orbit-info --markdown > docs/env.md'
          % doc)
    sys.exit(1)
print('%s matches orbit-info --markdown (%d lines)' % (doc, len(have.splitlines())))
