"""The web application's templates: the filters of swath.shared.humanize and the folder-name rules of its forms."""

from __future__ import annotations

from jinja2 import Environment

from swath.shared import humanize
from swath.web.fields import FOLDER_MAX, FOLDER_PATTERN, NAME_MAX


def environment() -> Environment:
    env = humanize.environment("swath.web")
    env.globals.update(folder_pattern=FOLDER_PATTERN, folder_max=FOLDER_MAX, name_max=NAME_MAX)
    return env
