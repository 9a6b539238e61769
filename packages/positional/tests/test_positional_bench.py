"""CPU: the bench's kernel-duration column (bench/kernel_duration.py) cuts a profiler trace into
calls the way the bench launches them (flush, lead spin, call), so a call's device time is the sum
of its own kernels: a multi-kernel peer, the empty kernel (itself a spin) and a call that launches
a fill of its own are each counted whole, and a trace that does not match the launches is an error."""

import importlib.util
import pathlib

import pytest

_path = pathlib.Path(__file__).resolve().parents[1] / "bench" / "kernel_duration.py"
_spec = importlib.util.spec_from_file_location("positional_kernel_duration", _path)
kd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kd)

FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, ...>"
SPIN = "at::cuda::(anonymous namespace)::spin_kernel(long)"


def _trace(calls):
    """A chrome trace of calls, each (kernel names, durations): flush + lead before each."""
    ev, t = [], 0.0
    for names, durs in calls:
        for name, dur in [(FILL, 30.0), (SPIN, 50.0), *zip(names, durs)]:
            ev.append({"cat": "kernel", "name": name, "ts": t, "dur": dur})
            t += dur + 1.0
    ev.append({"cat": "cpu_op", "name": "aten::fill_", "ts": 0.0, "dur": 5.0})  # host events are ignored
    ev.reverse()  # the parser orders by start time
    return {"traceEvents": ev}


def test_calls_are_cut_at_each_flush_and_lead():
    calls = [(["rope_kernel_stage"], [24.0]), (["triton_a", "triton_b", "triton_c"], [10.0, 12.0, 9.5]),
             ([SPIN], [1.5]), ([FILL, "rope_kernel_early"], [2.0, 25.0]),
             (["rope_kernel_stage"], [26.0]), (["triton_a", "triton_b", "triton_c"], [10.0, 12.0, 10.5]),
             ([SPIN], [1.7]), ([FILL, "rope_kernel_early"], [2.0, 27.0]),
             (["rope_kernel_stage"], [22.0]), (["triton_a", "triton_b", "triton_c"], [10.0, 12.0, 11.5]),
             ([SPIN], [1.6]), ([FILL, "rope_kernel_early"], [2.0, 26.0])]
    order = ["mlops", "peer", "empty", "fills"] * 3
    got = kd.per_call_us(kd.device_events(_trace(calls)), order)
    assert got == {"mlops": {"kernel_us": 24.0, "kernels": 1}, "peer": {"kernel_us": 32.5, "kernels": 3},
                   "empty": {"kernel_us": 1.6, "kernels": 1}, "fills": {"kernel_us": 28.0, "kernels": 2}}


def test_memsets_count_and_a_mismatched_trace_is_an_error():
    tr = _trace([(["k"], [3.0]), (["k"], [5.0])])
    tr["traceEvents"].append({"cat": "gpu_memset", "name": "Memset (Device)", "ts": 1e6, "dur": 0.5})
    assert kd.per_call_us(kd.device_events(tr), ["a", "b"]) == {"a": {"kernel_us": 3.0, "kernels": 1},
                                                                 "b": {"kernel_us": 5.5, "kernels": 2}}
    with pytest.raises(RuntimeError, match="2 calls in the trace, 3 launched"):
        kd.per_call_us(kd.device_events(tr), ["a", "b", "a"])
