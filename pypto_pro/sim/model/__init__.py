"""The simulated machine: memories and tile layouts, the chip's L2 and HBM, instruction costs."""
