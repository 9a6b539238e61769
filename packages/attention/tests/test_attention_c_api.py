"""CPU (CI): the mlops-attention C library on its own (ctest: tests/c/test_attention_c.c), and an
installed prefix consumed by a plain C program through find_package(mlops COMPONENTS attention) and
pkg-config (tools/testing/mlops_capi.py)."""

from mlops_capi import CApiTests


class TestAttentionCApi(CApiTests):
    package = "attention"
    headers = ("include/mlops/fbla.h",)
    demo = "fbla_demo"
    demo_output = "out[0..3] = "
