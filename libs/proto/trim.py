"""trim(): the one definition of trimming an entry, a note or an old (spec 3).

Trimming removes Unicode White_Space (PropList.txt) from both ends, as the spec's reference does
(Rust's str::trim). Python's str.strip() with no argument removes more: it takes the C0 controls
U+001C..U+001F (file, group, record and unit separators) for white space, so a text starting or
ending with one would be cut before the check could refuse it (rule 1: no control character but
newline and tab). Every place that trims what memory holds or is asked to match uses this, in
memoryd and in the parse of a tool's arguments, so the count, the check and the matching all see
the same text.
"""

import re

# White_Space in PropList.txt, unchanged since Unicode 6.3 (which took U+180E out): tab, newline,
# vertical tab, form feed, carriage return, space, NEL, no-break space, Ogham space mark, the
# spaces U+2000..U+200A, line and paragraph separators, narrow no-break space, medium mathematical
# space and ideographic space.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

WHITE_SPACE_RUN = re.compile("[" + re.escape(WHITE_SPACE) + "]+")


def trim(text: str) -> str:
    """text without White_Space at its start and end."""
    return text.strip(WHITE_SPACE)


def words(text: str) -> list[str]:
    """text split on runs of White_Space, edges ignored: what is left when spacing is not read."""
    return [part for part in WHITE_SPACE_RUN.split(text) if part]
