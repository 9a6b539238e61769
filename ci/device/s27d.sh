#!/bin/bash
# Session 27's fourth device call (GPU run 138): d3 = 4ea40ab (digits by a power of two), d5 = 8b0d756 (S = c 2^k as
# branches), d6 = dd5efd3 (d5's values, digit_scale by selects); d6 tested.
W="d3=.carry/s27/d3 d5=.carry/s27/d5 d6=.carry/s27/d6" T=d6 T_C75S=.carry/s27/d6c75s N=r27d exec bash ci/device/s27ab.sh
