"""CPU (CI): the mlops-vocab C library on its own (ctest), and an installed prefix consumed by a
plain C program through find_package(mlops COMPONENTS vocab) and pkg-config (tools/testing/mlops_capi.py)."""

from mlops_capi import CApiTests


class TestVocabCApi(CApiTests):
    package = "vocab"
    headers = ("include/mlops/vocab.h",)
    demo = "vocab_demo"
    demo_output = 'tokens = '
