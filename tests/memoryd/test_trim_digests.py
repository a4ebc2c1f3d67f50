"""The digests of texts (a forget's, forgetlines.digest; an import's floor, importfloor.digest) trim
as the parse and forget trim (proto.trim: Unicode White_Space only), and stay what journals and
forgotten.jsonl already hold. A memoryd that trimmed with str.strip() also cut U+001C..U+001F, so
for every text without them at an edge the two trims agree and so do the digests. A text with one
there (a session record, a recall query, a pending write's argument: nothing refused it) was
listed by the digest str.strip() gave; it stays forgotten (digests_of), in the index's check of
whole rows and of rows cut at another max_record_bytes (keptout)."""

import hashlib

import pytest

from memoryd.data import importfloor, matching
from memoryd.journal import forgetlines, keptout
from proto.trim import WHITE_SPACE, trim

SEPARATORS = "\x1c\x1d\x1e\x1f"
CORES = ["The safe's code is 90210.", "a", "two\nlines", "in\x1fside", "\u3000x\u00a0y"]


def old_forget_digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()


def old_floor_digest(text: str) -> bytes:
    return hashlib.blake2b(text.strip().encode("utf-8", "surrogatepass"), digest_size=16).digest()


def edged(core: str) -> list[str]:
    """core with each White_Space character at its start, its end, and both."""
    core = trim(core)
    texts = [core, WHITE_SPACE + core + WHITE_SPACE]
    for space in WHITE_SPACE:
        texts += [space + core, core + space, space + core + space, space * 3 + core + space * 2]
    return texts


@pytest.mark.parametrize("core", CORES)
def test_a_text_memoryd_could_have_written_keeps_its_digest(core):
    for text in edged(core):
        assert trim(text) == text.strip()
        assert forgetlines.digest(text) == old_forget_digest(text)
        assert forgetlines.digests_of(text) == (old_forget_digest(text),)
        assert importfloor.digest(text) == old_floor_digest(text)


@pytest.mark.parametrize("control", SEPARATORS)
@pytest.mark.parametrize("core", CORES)
def test_a_separator_at_an_edge_is_part_of_the_text_and_its_older_digest_still_matches(
    control, core
):
    for text in edged(core):
        for held in (control + text, text + control, f" {control}{text}{control}\n"):
            assert trim(held) != held.strip()
            # the digest is of the text as the parse reads it, the same in both digests
            assert forgetlines.digest(held) == hashlib.sha256(trim(held).encode()).hexdigest()
            assert importfloor.digest(held) == importfloor.digest(trim(held))
            assert importfloor.digest(held) != importfloor.digest(held.strip())
            # what an older memoryd listed for it still names it
            assert forgetlines.digests_of(held) == (
                forgetlines.digest(held),
                old_forget_digest(held),
            )
            assert forgetlines.text_listed(held, {old_forget_digest(held)})
            assert matching.holds_forgotten("user", held, frozenset({old_forget_digest(held)}))


def test_the_two_digests_tell_the_same_texts_apart():
    texts = [t for core in CORES for t in edged(core)]
    texts += [c + t for c in SEPARATORS for t in texts[:40]]
    for a in texts:
        for b in texts[:60]:
            same_forget = forgetlines.digest(a) == forgetlines.digest(b)
            assert same_forget == (importfloor.digest(a) == importfloor.digest(b))
            assert same_forget == matching.same(a, b)


def test_a_forget_of_the_text_with_its_separator_does_not_take_the_text_without_it():
    held = "\x1fThe safe's code is 90210."
    listed = frozenset({forgetlines.digest(held)})
    assert matching.holds_forgotten("user", held, listed)
    assert not matching.holds_forgotten("user", held[1:], listed)


@pytest.mark.parametrize("control", SEPARATORS)
def test_a_row_cut_at_another_cap_is_kept_out_by_the_digest_either_trim_gave(control):
    long = "word " * 400 + "end."  # longer than any cut
    row = control + long + " and the rest of a longer record"
    cut = (control + long)[:1500]
    for listed in (forgetlines.digest(cut), old_forget_digest(cut)):
        assert keptout.held_under_key("user", row, frozenset({listed})), listed
    assert not keptout.held_under_key("user", row, frozenset({forgetlines.digest("other")}))
