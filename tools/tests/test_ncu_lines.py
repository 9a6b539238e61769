"""tools/ncu_lines.py on a small made-up profile: counts summed onto innermost and outermost source lines, per item,
the --line breakdown, and a listing whose SASS differs from the profile's refused."""
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import ncu_lines  # noqa: E402

CSV = '''"Kernel Name","void k(float*)",
"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)","Instructions Executed"
"0x0","      LDC R1, c[0x0][0x28]","5","5","10"
"0x10","      FMUL R2, R3, R4","1","0","40"
"0x20","      @P0 FFMA R2, R3, R4, R2","2","1","60"
"0x30","      EXIT","0","0","10"
'''

SASS = '''.text.k:
        //## File "/src/k.cu", line 10
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        //## File "/src/math.h", line 3 inlined at "/src/k.cu", line 12
        //## File "/src/k.cu", line 12
        /*0010*/                   FMUL R2, R3, R4 ;
        //## File "/src/math.h", line 4 inlined at "/src/k.cu", line 12
        //## File "/src/k.cu", line 12
        /*0020*/              @P0  FFMA R2, R3, R4, R2 ;
        //## File "/src/k.cu", line 14
        /*0030*/                   EXIT ;
'''


def _files(tmp_path, sass=SASS):
    (tmp_path / "k.csv").write_text(CSV)
    (tmp_path / "k.sass").write_text(sass)
    return str(tmp_path / "k.csv"), str(tmp_path / "k.sass")


def test_counts_by_line_per_item(tmp_path, capsys):
    c, s = _files(tmp_path)
    assert ncu_lines.main([c, s, "--per", "10", "--line", "12"]) == 0
    out = capsys.readouterr().out
    assert "120 warp instructions (12 per 10), 8 stall samples" in out
    assert re.search(r"k\.cu:12\s+10\s+83\.3 %\s+37\.5 %", out), out  # 40 + 60 from two inlined lines, 3 of 8 samples
    assert re.search(r"k\.cu:10\s+1\s+8\.3 %\s+62\.5 %", out), out
    assert re.search(r"math\.h:4\s+6\s+50\.0 %", out), out
    assert "opcodes: FFMA 6, FMUL 4" in out


def test_different_sass_refused(tmp_path, capsys):
    c, s = _files(tmp_path, SASS.replace("FMUL R2, R3, R4", "FADD R2, R3, R4"))
    assert ncu_lines.main([c, s]) == 1
    assert "the SASS differs" in capsys.readouterr().err
