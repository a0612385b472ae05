"""The real `pypto_pro.runtime.opc` package: binary delivery (`pypto_compile`)."""
