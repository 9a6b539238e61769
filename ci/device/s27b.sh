#!/bin/bash
# Session 27's second device call (GPU run 136): base = c795acc (.carry/s26/rev: session 26's kernels), d1 = 2321876 (the
# digits without divisions, exp_att), d3 = 4ea40ab (d1 + the partial's uniform row bases and full-chunk adds); d3 tested.
W="base=.carry/s26/rev d1=.carry/s27/d1 d3=.carry/s27/d3" T=d3 T_C75S=.carry/s27/d3c75s N=r27b \
  exec bash ci/device/s27ab.sh
