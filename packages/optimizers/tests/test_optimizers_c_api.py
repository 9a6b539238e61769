"""CPU (CI): the mlops-optimizers C library on its own (ctest), and an installed prefix consumed by a
plain C program through find_package(mlops COMPONENTS optimizers) and pkg-config (tools/testing/mlops_capi.py)."""

from mlops_capi import CApiTests


class TestOptimizersCApi(CApiTests):
    package = "optimizers"
    headers = ("include/mlops/optimizers.h",)
    demo = "optimizers_demo"
    demo_output = 'p[0..3] = '
