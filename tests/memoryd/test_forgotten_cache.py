"""forgotten.keys keeps the keys of a few files read, not of every file ever read: a restore reads
its staged copy under a name of its own each time."""

from memoryd.home import Home
from memoryd.journal import forgotten, forgottenwrite, readcache


def test_the_cache_of_forgotten_keys_stays_small_and_right(tmp_path):
    homes = []
    for n in range(3 * readcache.CACHED_MOST):
        home = Home(tmp_path / f"h{n}")
        home.memory.mkdir(parents=True, mode=0o700)
        forgottenwrite.add(home, forgotten.note_key(n), "2026-09-24T20:00Z", f"e{n}")
        homes.append(home)
        assert forgotten.listed(home) == {forgotten.note_key(n)}
        assert len(forgotten._cache) <= readcache.CACHED_MOST
    # read again after their entries were dropped: each still gives its own keys
    for n, home in enumerate(homes):
        assert forgotten.listed(home) == {forgotten.note_key(n)}
