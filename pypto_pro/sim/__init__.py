"""The Ascend 950 simulator: SoC tables, memories, functional op library, cost model and engine."""
