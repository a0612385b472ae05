"""The IR of a compiled kernel as programs the engines run: the scalar unit's closures, what each
instruction issues, SIMT bodies and VF sections."""
