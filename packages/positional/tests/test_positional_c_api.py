"""CPU (CI): the mlops-positional C library on its own (ctest), and an installed prefix consumed by a
plain C program through find_package(mlops COMPONENTS positional) and pkg-config (tools/testing/mlops_capi.py)."""

from mlops_capi import CApiTests


class TestPositionalCApi(CApiTests):
    package = "positional"
    headers = ("include/mlops/rope.h", "include/mlops/rope.cuh")
    demo = "rope_demo"
    demo_output = "q'[0..3] = "
