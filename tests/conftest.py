"""Settings for the whole suite: hypothesis without per-example deadlines (a 2-core machine busy
with other tests would trip them), and derandomised where CI=true so a run there is repeatable."""

import os

from hypothesis import settings

settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True)
settings.load_profile(
    "ci" if os.environ.get("CI", "").lower() in ("true", "1", "yes") else "default"
)
