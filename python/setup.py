"""Builds orbit_torch against the installed torch and liborbit.

    ORBIT_BUILD=../build pip install --no-build-isolation ./python

liborbit.so is taken from ORBIT_BUILD (default: the repository's build/) and copied into the
package, which finds it next to itself (rpath $ORIGIN).
"""
import os
import shutil

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
build = os.path.abspath(os.environ.get("ORBIT_BUILD", os.path.join(root, "build")))
lib = os.path.join(build, "liborbit.so")
if not os.path.exists(lib):
    raise SystemExit(f"orbit_torch: {lib} is missing: build liborbit first (bash scripts/build.sh build)")
# the soname the extension records is liborbit.so.0: ship that file
soname = os.path.basename(os.path.realpath(lib)).split(".so")[0] + ".so.0"
shutil.copyfile(os.path.realpath(lib), os.path.join(here, "orbit_torch", soname))

setup(
    name="orbit_torch",
    version="0.1.0",
    description="orbit as a torch.distributed backend",
    packages=["orbit_torch"],
    package_data={"orbit_torch": ["liborbit.so*"]},
    ext_modules=[
        CppExtension(
            "orbit_torch._C",
            ["orbit_torch/csrc/backend.cpp", "orbit_torch/csrc/ops.cpp", "orbit_torch/csrc/module.cpp"],
            include_dirs=[os.path.join(root, "include")],
            library_dirs=[build],
            libraries=["orbit"],
            extra_compile_args=["-O2", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"],
            extra_link_args=["-Wl,-rpath,$ORIGIN"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
