"""PyPTO Pro notebook layer: %%pypto cell magics and the Workbench."""
