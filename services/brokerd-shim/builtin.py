"""The two built-in grants (spec 8): recall and memory, always present, whatever grants/ holds.

Each text is exactly the block spec 8 shows: six lines, the first the comment "# built in: <tool>",
each line ending in one newline (LF), the last one included, with no indentation and no blank
line after. grant_sha256 is the sha256 of exactly those bytes (UTF-8), so the audit log names a
built-in grant the way it names any other. The texts are parsed with the owner's grant parser, so
they are grants in the same sense as a file in grants/.
"""

import hashlib

BUILTIN_PREFIX = "builtin-"
MEMORY_TOOLS = frozenset({"recall", "memory"})


def builtin_text(tool: str) -> str:
    return (
        f"# built in: {tool}\n"
        f'tool = "{tool}"\n'
        'mode = "auto"\n'
        'max_taint = "secret"\n'
        'result_class = "private"\n'
        "untrusted = false\n"
    )


BUILTIN_TEXTS: dict[str, str] = {
    f"{BUILTIN_PREFIX}recall": builtin_text("recall"),
    f"{BUILTIN_PREFIX}memory": builtin_text("memory"),
}


def builtin_sha256(grant_id: str) -> str:
    return hashlib.sha256(BUILTIN_TEXTS[grant_id].encode("utf-8")).hexdigest()
