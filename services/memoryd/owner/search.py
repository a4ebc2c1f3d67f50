"""bxctl memory search: the owner's recall over the same index.

It calls Recaller.recall (recall.py), the agent's own search, so hits carry the same tags and the
answer the same label; the recall log line is marked "by": "owner" (session "owner"), and stats
leaves it out of the agent's hit counts. A hit from notes.md carries a reference, note:N (N its
number in notes.md counting from 0, as the index numbers it), that promote takes; a session
record's, session:ID:N, is what forget takes. The numbers it printed are what forget takes until
notes.md is next read again from its start (index/notesseen.py).
"""

from memoryd.owner import paging
from memoryd.recall.recaller import Recaller
from memoryd.search.defuse import defuse, defuse_within
from memoryd.search.query import SNIPPET_LIMIT

OWNER = "owner"
NOTE_KINDS = ("noted", "moved", "dropped")


def ref_of(hit) -> str | None:
    """note:N for a note (promote and forget take it), session:ID:N for a session record
    (forget takes it)."""
    if hit.kind in NOTE_KINDS:
        return f"note:{hit.record}"
    return f"session:{hit.session}:{hit.record}" if hit.kind == "session" else None


def hit_dict(position: int, hit) -> dict:
    return {
        "position": position,
        "tag": hit.tag,
        "kind": hit.kind,
        "session": hit.session,
        "record": hit.record,
        "time": hit.time,
        "role": hit.role,
        "class": hit.klass,
        "untrusted": hit.untrusted,
        "ref": ref_of(hit),
        "snippet": hit.snippet,
    }


def answer(recaller: Recaller, query: str, k: int, as_json: bool) -> str:
    seen = recaller.index.notes_seen
    renumbered = seen.renumbered  # taken first: a renumbering during the read is not passed
    result = recaller.recall(query, k, session=OWNER, by=OWNER)
    seen.print_numbers((h.record for h in result.hits if h.kind in NOTE_KINDS), renumbered)
    label = {"class": result.label.klass, "untrusted": result.label.untrusted}
    if as_json:
        hits = [hit_dict(n, hit) for n, hit in enumerate(result.hits, 1)]
        return paging.dumps({"query": query, "k": k, "hits": hits, "label": label})
    if not result.hits:
        return f'(no matches for "{defuse(query, escaped=False)}")'
    lines = []
    for position, hit in enumerate(result.hits, 1):
        ref = ref_of(hit)
        lines.append(hit.header(position) + (f" · {ref}" if ref else ""))
        # Defused as recall's answer is: indented or not, no snippet line may look like a hit's.
        # Not escaped here: bxctl escapes all that memoryd answers, and a second escape would
        # show the owner ESC as \\x1b. Cut as recall cuts, escapes counted.
        shown = defuse_within(hit.snippet, SNIPPET_LIMIT, escaped=False)
        lines.append("    " + shown.replace("\n", "\n    "))
    untrusted = ", untrusted" if result.label.untrusted else ""
    lines.append(f"(label: {result.label.klass}{untrusted})")
    return "\n".join(lines)
