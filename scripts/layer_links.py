#!/usr/bin/env python3
"""Make one layer's include root: DEST/<layer> -> SRC/<layer> for the layer itself and every
layer below it, nothing else, so that an #include of a layer above does not compile.
Usage: layer_links.py SRC DEST LAYER [LAYER ...]  (run by meson at configure time)"""
import os
import sys

src, dest, layers = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(dest, exist_ok=True)
for name in os.listdir(dest):  # a layer that moved up or was renamed must not linger
    if name not in layers and os.path.islink(os.path.join(dest, name)):
        os.unlink(os.path.join(dest, name))
for layer in layers:
    link, target = os.path.join(dest, layer), os.path.join(src, layer)
    if os.path.islink(link) and os.readlink(link) == target:
        continue
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(target, link)
