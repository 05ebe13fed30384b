"""What a server needs to run the real model for visitors, below the episodes and the app.

The job queue (:mod:`.jobs`), the model's child processes (:mod:`.model_process`), the work the
pages submit (:mod:`.workers`), results shared by every session (:mod:`.shared`) and the door the
pages use (:mod:`.service`: the :class:`Service` Protocol, the real :class:`ModelService`). No
Panel: a notebook, a CLI or a test uses it as the server does.
"""

from .service import NO_MODEL, ModelService, Service

__all__ = ["NO_MODEL", "ModelService", "Service"]
