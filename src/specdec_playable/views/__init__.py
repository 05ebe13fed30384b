"""Panel views and Bokeh figure builders. Everything here is built per session."""
