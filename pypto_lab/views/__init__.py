"""The workbench's views, one module per thing shown: `source`, `passes`, `code` (generated C++),
`run`, `blocks`, `timeline` (+ `timeline_lod`), `roofline`, and `html` (shared script-free
HTML pieces). Each view is a plain function of result records returning HTML, a plotly figure
or an ipywidgets widget; none keeps state.
"""
