"""Words on the page, computed from the numbers they state: the helpers every page uses
(:mod:`.words`) and each episode's computed sentences. Below state and views, so both share
them; no Panel, Bokeh or param."""
