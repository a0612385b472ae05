"""The instruction sequences the real code generator lowers the fused vector ops to, computed
with torch (shared by the simulator's and the native backend's tests of `sim.ops.fused`)."""
from __future__ import annotations

import torch


def h(x: torch.Tensor) -> torch.Tensor:
    """Float values rounded to FP16 (one instruction's FP16 result), as float32."""
    return x.half().float()


#: op → (lhs after, out after) from float views of FP16 inputs (a → lhs, b → rhs, c → out)
SEQUENCES = {
    "add_relu": lambda a, b, c: (h(a + b), torch.relu(h(a + b))),
    "sub_relu": lambda a, b, c: (h(a - b), torch.relu(h(a - b))),
    "mul_add_dst": lambda a, b, c: (h(a * b), h(h(a * b) + c)),
    "fused_mul_add": lambda a, b, c: (h(a * c), h(h(a * c) + b)),
    "fused_mul_add_relu": lambda a, b, c: (h(h(a * c) + b), torch.relu(h(h(a * c) + b))),
}
