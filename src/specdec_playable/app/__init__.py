"""What a server needs and a notebook does not.

The job queue (:mod:`.jobs`), results shared by every session (:mod:`.shared`), the model's
child processes (:mod:`.model_process`), the site (:mod:`.site`), the command line (:mod:`.cli`)
and the static export (:mod:`.export`). State and views reach serving only through
:mod:`.interface`.
"""
