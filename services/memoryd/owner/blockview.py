"""bxctl memory block: the block exactly as the next session gets it, then what it leaves out and
why, and each file's size against its limit.

The block is block.build's, the same function memory_block answers with; the entries left out are
block.left_out's, the same rules the block applies (the check, a repeat, a class above [index]
max_class). A refused block is shown as its refusal.

Each entry left out is printed under the ref forget takes (memory.md:N, its place in the file as
read here), and forget takes that ref as naming the entry printed beside it, wherever it stands
after later writes (memory/shown.py), as it does stats' refs.
"""

from memoryd.errors import BlockRefused, FileDamaged
from memoryd.home import Home
from memoryd.memory import block, entries, shown
from memoryd.memory.entries import LIMITS
from memoryd.memory.memfiles import read_entries, read_text
from memoryd.memory.store import MemoryStore
from memoryd.owner import paging
from memoryd.owner.stats import GONE_SINCE, IDENTITY


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


def _keep_print(store: MemoryStore, printed: list[dict]) -> None:
    """Save the refs printed as the entries forget takes under them, then look at the files
    again: a forget may have erased one of them between the read above and this save, and
    scrubbed the saved print, which the save would bring its text back into (as stats does)."""
    by_file: dict[str, dict[int, str]] = {}
    for item in printed:
        by_file.setdefault(item["file"], {})[item["number"]] = item["entry"]
    for name, numbered in by_file.items():
        shown.print_refs(store, name, numbered)
    held: set[str] = set()
    for name in IDENTITY:
        try:
            held.update(read_entries(store.home, name))
        except (FileDamaged, OSError):
            pass  # its entries count as gone: a forget by number reads it and refuses alike
    for text in sorted({item["entry"] for item in printed} - held):
        shown.scrub(store, text, GONE_SINCE)


def answer(store: MemoryStore, as_json: bool) -> str:
    home, classes = store.home, store.block_classes()
    try:
        text, refused = block.build(home, classes), None
    except BlockRefused as e:
        text, refused = None, str(e)
    sizes, skipped = _sizes_and_left_out(home, classes)
    _keep_print(store, skipped[:LEFT_OUT_SHOWN])  # the refs printed below, in either form
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
