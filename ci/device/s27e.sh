#!/bin/bash
# Session 27's fifth device call (GPU run 139): s26c.sh's ncu source profile of the final wheel's B8 L128K kEarly refine
# (.carry/s27/d6 = dd5efd3, one launch, 3+3 exact). Results in $OUT/r27e.tgz: new-b8-l131072-details.txt / -source.csv
# (run 139 named them d6-b8-l131072-*).
WD=.carry/s27/d6 N=r27e exec bash ci/device/s26c.sh
