#!/bin/bash
# Session 26's sixth device call (GPU run 133): s26c.sh's ncu profile of run 132's new wheel (.carry/s26/fin = 4b138be:
# the K codes fragment-ordered, no L2 prefetch of the next item), to see the L2's share after the prefetch went.
W=fin N=r26f exec bash ci/device/s26c.sh
