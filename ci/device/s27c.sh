#!/bin/bash
# Session 27's third device call (GPU run 137): d3 = 4ea40ab, d5 = 8b0d756 (d3 + combine_warps_kernel's m / l a tile
# ahead, the same values; digit_scale's S = c 2^k as branches, new numerics); d5 tested.
W="d3=.carry/s27/d3 d5=.carry/s27/d5" T=d5 T_C75S=.carry/s27/d5c75s N=r27c exec bash ci/device/s27ab.sh
