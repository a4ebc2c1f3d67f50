"""bxctl memory block: the block exactly as the next session gets it, then what it leaves out and
why, and each file's size against its limit.

The block is block.build's, the same function memory_block answers with; the entries left out are
block.left_out's, the same rules the block applies (the check, a repeat, a class above [index]
max_class). A refused block is shown as its refusal.
"""

from memoryd.errors import BlockRefused, FileDamaged
from memoryd.home import Home
from memoryd.memory import block, entries
from memoryd.memory.entries import LIMITS
from memoryd.memory.memfiles import read_text
from memoryd.memory.store import MemoryStore
from memoryd.owner import paging


def _left_out(home: Home, name: str, file_entries: list[str], classes: block.Classes) -> list:
    try:
        above = classes.above(home, name, file_entries)
    except BlockRefused:
        above = {}  # the block itself is refused with the reason, shown above the list
    return [
        {"file": name, "number": n, "ref": f"{name}:{n}", "entry": e, "reason": r}
        for n, e, r in block.left_out(file_entries, above, classes.max_class)
    ]


def _sizes_and_left_out(home: Home, classes: block.Classes) -> tuple[list[dict], list[dict]]:
    sizes, skipped = [], []
    for name in ("soul.md", "memory.md", "user.md"):
        try:
            text = read_text(home.memory_file(name), name)
        except FileDamaged as e:
            sizes.append({"file": name, "length": None, "limit": LIMITS[name], "problem": str(e)})
            continue
        if name == "soul.md":
            length = len(text.strip())
        else:
            file_entries = entries.parse(text)
            length = entries.length(file_entries)
            skipped += _left_out(home, name, file_entries, classes)
        sizes.append({"file": name, "length": length, "limit": LIMITS[name]})
    return sizes, skipped


LEFT_OUT_SHOWN = 100


def answer(store: MemoryStore, as_json: bool) -> str:
    home, classes = store.home, store.block_classes()
    try:
        text, refused = block.build(home, classes), None
    except BlockRefused as e:
        text, refused = None, str(e)
    sizes, skipped = _sizes_and_left_out(home, classes)
    if as_json:
        return paging.dumps(
            {
                "block": text,
                "refused": refused,
                "left_out": skipped[:LEFT_OUT_SHOWN],
                "left_out_total": len(skipped),
                "sizes": sizes,
            }
        )
    lines = [text] if text is not None else [f"(no block: the next session is refused: {refused})"]
    lines.append("")
    lines.append("-- left out of the block --")
    if not skipped:
        lines.append("(nothing)")
    total = len(skipped)
    skipped = skipped[:LEFT_OUT_SHOWN]  # a file edited by hand can hold any number
    for item in skipped:
        entry, _ = paging.cut_text(item["entry"], 2_000)
        lines.append(f"{item['ref']}: {item['reason']}")  # the ref forget takes, from 1
        lines.append("    " + entry.replace("\n", "\n    "))
    if total > len(skipped):
        lines.append(f"(and {total - len(skipped):,} more left out)")
    lines.append("")
    lines.append("-- sizes --")
    for size in sizes:
        if size["length"] is None:
            lines.append(f"{size['file']}: {size['problem']}")
        else:
            over = "  OVER THE LIMIT" if size["length"] > size["limit"] else ""
            lines.append(
                f"{size['file']}: {size['length']:,} of {size['limit']:,} characters{over}"
            )
    return "\n".join(lines)
