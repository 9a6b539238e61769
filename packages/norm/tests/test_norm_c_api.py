"""CPU (CI): the mlops-norm C library on its own (ctest), and an installed prefix consumed by a
plain C program through find_package(mlops COMPONENTS norm) and pkg-config (tools/testing/mlops_capi.py)."""

from mlops_capi import CApiTests


class TestNormCApi(CApiTests):
    package = "norm"
    headers = ("include/mlops/norm.h",)
    demo = "norm_demo"
    demo_output = 'y[0..3] = '
