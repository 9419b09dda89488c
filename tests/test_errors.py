"""One error type: every error class swath raises on purpose is a SwathError whose code is a listed code."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import swath
from swath.core.errors import SwathError
from swath.harvesters.errors import RemoteError
from swath.messages import codes
from swath.messages.model import Note
from swath.platforms.metashare.errors import MetashareError

LISTED = {value for name, value in vars(codes).items() if name.isupper() and isinstance(value, str)}


def all_subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= all_subclasses(sub)
    return found


def import_everything() -> None:
    for info in pkgutil.walk_packages(swath.__path__, "swath."):
        if ".migrations" not in info.name and not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def test_every_error_class_has_a_listed_code():
    import_everything()
    classes = all_subclasses(SwathError)
    assert len(classes) >= 20  # harvest, metadata, META-SHARE, message, store, broker, path, request errors
    unlisted = sorted(f"{c.__module__}.{c.__qualname__}: {c.code!r}" for c in classes if c.code not in LISTED)
    assert unlisted == []


def test_one_constructor_for_all():
    err = MetashareError("LR x: bad zip", code=codes.BAD_ZIP, seed_id="seed-1", status=200)
    assert (err.code, err.message, err.seed_id, err.status, str(err)) == (
        codes.BAD_ZIP, "LR x: bad zip", "seed-1", 200, "LR x: bad zip")
    assert RemoteError("gone").code == codes.REMOTE_ERROR  # the class's code when none is given


@pytest.mark.parametrize("error, expected", [
    (RemoteError("503 three times", seed_id="s1", status=503), Note(codes.REMOTE_ERROR, "503 three times", "s1")),
    (MetashareError("no login", code=codes.UNAUTHORIZED), Note(codes.UNAUTHORIZED, "no login", "s9")),
    (KeyError("x"), Note(codes.UNKNOWN_ERROR, "KeyError: 'x'", "s9")),
])
def test_errors_become_notes_in_one_place(error, expected):
    assert Note.of(error, seed_id="s9") == expected
