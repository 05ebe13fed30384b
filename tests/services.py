"""The server as a state test sees it: its own queue, work that needs no model, and whether the
model counts as installed (a :class:`runtime.service.ModelService`)."""

from __future__ import annotations

from specdec_playable.runtime import service as interface


def service(queue, generation=None, *, scoring=None, installed=True) -> interface.ModelService:
    """A service over ``queue``: Episode 7's runs do ``generation``, Episode 4's pastes ``scoring``
    (each the server's own work when not given)."""
    return interface.ModelService(queue=lambda: queue, installed=lambda: installed,
                                  generation=generation or interface.generation_work,
                                  scoring=scoring or interface.scoring_work)
