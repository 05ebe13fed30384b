"""The top of the house: the site (:mod:`.site`), the command line (:mod:`.cli`), the static export
(:mod:`.export`), the shipped files (:mod:`.files`) and Panel's thread settings
(:mod:`.panel_threads`). It builds the real service (``runtime.ModelService``) and hands it to the
pages; nothing below it imports it.
"""
