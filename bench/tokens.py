"""The baseline's size in tokens (spec 1, item 5): at most 3,000, with the starter soul.md and
with every memory file at its limit.

The baseline is built the way a session gets it: memoryd's real renderer (MemoryStore.block) on a
temporary home, handed to loopd-shim's LoopService, which writes 0.baseline.json; then the saved
system prompt and the tool schemas (as compact JSON, the tools array sent to the model) are
counted with the o200k_base BPE from the bpe-openai package, which ships its vocabulary.

"At its limit" means soul.md at 4,000 characters (the starter and further persona sections, as an
owner would grow it), memory.md at 2,200 and user.md at 1,375, each filled with varied English
entries, the last cut so the file is exactly at its limit.

The limits are characters and the budget tokens, so the promise holds for text of about four
characters a token, as English is. The same full case is also measured with memory.md and user.md
written in other scripts (tokens_scripts.py; soul.md as above), and shown per script with its
characters per token: those figures are shown, not held to the budget (the exit status is the
English cases').

    .venv/bin/python bench/tokens.py
"""

import asyncio
import json
import sys
import tempfile
from pathlib import Path

import bpe_openai

from loopd_shim.service import LoopService
from loopd_shim.sessions import SessionStore
from memoryd.home import Home
from memoryd.memory.entries import JOINER, LIMITS
from memoryd.memory.store import MemoryStore
from proto.messages import SessionStart, ToolRequest, ToolResponse

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokens_scripts  # noqa: E402  (beside this file)

REPO = Path(__file__).resolve().parents[1]
SYSTEM_MD = REPO / "config" / "system.md"
SOUL_STARTER = REPO / "config" / "soul.md"
BUDGET = 3_000

MEMORY_ENTRIES = [
    "The home server is a Debian 12 box in the hall cupboard; backups run nightly at 02:30 to the "
    "NAS and weekly to an encrypted bucket.",
    "Project Larkspur ships the mobile release on the second Thursday of each month; the owner "
    "reviews the changelog the day before.",
    "Invoices go out on the first working day of the month from the shared finance folder, "
    "numbered YYYY-NNN.",
    "The owner's calendar is the source of truth for meetings; never book over blocks marked "
    "focus.",
    "When summarising papers, lead with the claim, then the method, then one sentence on how "
    "strong the evidence is.",
    "The staging database is refreshed from production every Sunday night, so Monday morning "
    "numbers look odd until 09:00.",
    "Pull requests in the garden-sensors repository need one review from Priya before merging.",
    "Weekly report: three bullet points on progress, one on risks, sent Friday before 16:00 "
    "local time.",
    "The VPN drops when the laptop sleeps; reconnect with the tray icon rather than restarting.",
    "Quotes for the kitchen renovation are filed under Home/Renovation/2026 with the supplier's "
    "name in the file name.",
    "Use metric units everywhere except for the owner's cycling logs, which are in miles.",
    "Passwords and API keys live in the password manager only; never paste them into notes or "
    "chat.",
    "The quarterly planning document uses the template in Drive called Q-plan v3; older versions "
    "are archived.",
    "Grocery orders are placed on Wednesday evening for Thursday delivery; the list lives in the "
    "shared note called Groceries.",
    "Conference talk drafts go to Marta for a read-through at least a week before the deadline.",
    "Prefer plain-text email for anything sent to the university; their filter strips HTML.",
    "The car's MOT is due in March; the garage on Station Road needs two weeks' notice.",
    "For travel, the owner prefers trains under five hours and aisle seats on flights.",
    "Print jobs go to the office printer called Heron; the one in the study jams on thick paper.",
    "The photo library is deduplicated each January; keep originals, delete edited exports.",
    "Tax return: the accountant, Helen Price, wants receipts scanned by the end of October.",
    "The boiler service contract renews in June; the engineer prefers morning slots.",
    "Slides use the studio's dark theme, at most six bullets a slide, with sources in the notes.",
    "Client Northwind pays on 45-day terms; chase politely on day 50, copy the account manager.",
    "The team stand-up moved to 09:45 on weekdays since the Lisbon office joined.",
]

USER_ENTRIES = [
    "Name: Alex Moreau. Pronouns: they/them. Lives in Bristol, works remotely for a small "
    "software studio.",
    "Prefers short answers with the conclusion first; likes a table when comparing more than two "
    "options.",
    "Timezone Europe/London; answers in UTC confuse them unless both times are given.",
    "Vegetarian; allergic to peanuts. Partner Sam is vegan.",
    "Plays cello in an amateur orchestra on Tuesday evenings; do not schedule calls then.",
    "Speaks English and French; write to French clients in French.",
    "Dislikes being asked more than one question at a time.",
    "Runs 10k on Saturday mornings and tracks training in a spreadsheet called Runs 2026.",
    "Daughter Lea starts secondary school in September; school letters go to the Family folder.",
    "Reads on an e-reader; send long articles as EPUB rather than links.",
    "Birthday 14 May; mother's birthday 2 November, likes garden tokens as presents.",
    "Works best in the morning; keeps afternoons for calls and admin.",
    "Wants news summaries without sport or celebrity items.",
    "Drives an electric hatchback; plan long trips around rapid chargers.",
    "Keeps a paper notebook for ideas and photographs the pages on Sundays.",
    "Prefers Signal for personal messages and email for anything about work.",
    "Is learning Portuguese for a sabbatical in Porto next spring; practise phrases when asked.",
    "Takes the 07:52 train to London on Wednesdays for the studio's office day.",
    "Likes a one-line weather note for Bristol with the morning briefing.",
]

SOUL_SECTIONS = """
## My owner's household

I help with a busy household as well as with work. I keep dates, bills and appointments in view,
and I remind my owner ahead of time rather than on the day. When two plans clash I point it out
and suggest which to move, with my reason.

## Writing

When I draft for my owner I write in their voice: plain words, short sentences, no filler, and
no exclamation marks. I keep a draft close to what was asked and mark anything I added. For
letters to officials I am formal and precise; for friends I am warm and brief.

## Research

When I look something up I prefer primary sources: the standard, the paper, the official page.
I say how old a source is when age matters, and I separate what a source says from what I infer
from it. If sources disagree I show the disagreement rather than pick a side quietly.

## Money

I never move money or commit my owner to paying anything. I can prepare a payment, a purchase or
a subscription change, and show exactly what it will cost, but my owner presses the button.

## Code

When I write code I keep it small and readable, I explain the change in a sentence, and I run the
tests before I say it works. I do not touch files outside the task without saying so. When a tool
or a command fails I show the error as it was, not a paraphrase of it, and I say what I will try
next. I prefer boring, well-known tools to clever new ones, and I leave things tidier than I
found them, with notes for whoever comes next.

## Time and attention

My owner's attention is the scarcest thing I handle. I batch small questions, I do not interrupt
for what can wait, and when something is urgent I say why in the first line. I keep track of what
I promised to do and I report back when it is done, or when it cannot be.

## Mistakes

When I make a mistake I own it in one sentence, fix what I can, and say what I changed so it does
not happen again. I do not hide a mistake inside a long answer.
"""


def fill(pieces: list[str], limit: int, separator: str) -> str:
    """Whole pieces while they fit, then the next piece cut so the text is exactly limit long."""
    text = ""
    for piece in pieces:
        joined = text + separator + piece if text else piece
        if len(joined) > limit:
            room = limit - len(text) - len(separator)
            cut = piece[:room].rstrip()
            cut = cut + "." * (room - len(cut))
            return text + separator + cut
        text = joined
    raise ValueError(f"not enough text to fill {limit:,} characters")


def full_files() -> dict[str, str]:
    """soul.md, memory.md and user.md, each exactly at its limit."""
    starter = SOUL_STARTER.read_text(encoding="utf-8").strip()
    sections = [part.strip() for part in SOUL_SECTIONS.split("\n\n") if part.strip()]
    files = {
        "soul.md": fill([starter, *sections], LIMITS["soul.md"], "\n\n"),
        "memory.md": fill(MEMORY_ENTRIES, LIMITS["memory.md"], JOINER),
        "user.md": fill(USER_ENTRIES, LIMITS["user.md"], JOINER),
    }
    return {name: text + "\n" for name, text in files.items()}


def script_files(script: str) -> dict[str, str]:
    """full_files() with memory.md and user.md at their limits in script's entries
    (tokens_scripts.py)."""
    files = full_files()
    for name, entries in (("memory.md", tokens_scripts.MEMORY), ("user.md", tokens_scripts.USER)):
        pieces = tokens_scripts.repeated(entries[script], LIMITS[name])
        files[name] = fill(pieces, LIMITS[name], JOINER) + "\n"
    return files


def chars_per_token(files: dict[str, str]) -> float:
    """Characters per o200k_base token of memory.md and user.md as written."""
    text = files["memory.md"] + files["user.md"]
    return len(text) / len(bpe_openai.get_encoding("o200k_base").encode(text))


class StoreSource:
    """memoryd's renderer as loopd-shim's memory source, without a socket."""

    def __init__(self, store: MemoryStore):
        self.store = store

    async def block(self) -> str:
        return self.store.block()

    async def session_updated(self, session: str) -> None:
        return None


class NoBroker:
    """Starting a session calls no tool."""

    async def call(self, request: ToolRequest) -> ToolResponse:
        raise NotImplementedError("no tool is called while a session starts")


def saved_baseline(root: Path, files: dict[str, str] | None) -> dict:
    """The baseline a new session saves, with memory/ holding files (or as ensure() leaves it)."""
    home = Home(root)
    store = MemoryStore(home, soul_starter=SOUL_STARTER, review=False)
    store.ensure()
    for name, text in (files or {}).items():
        home.memory_file(name).write_text(text, encoding="utf-8")
    service = LoopService(
        SessionStore(root / "sessions"), SYSTEM_MD, StoreSource(store), NoBroker()
    )
    asyncio.run(service.start(SessionStart(session="s-tokens")))
    return json.loads((root / "sessions" / "s-tokens" / "0.baseline.json").read_text())


def count_tokens(baseline: dict) -> dict[str, int]:
    """Tokens of the system prompt, of the tools array, and of both."""
    encoding = bpe_openai.get_encoding("o200k_base")
    tools = json.dumps(baseline["tools"], ensure_ascii=False, separators=(",", ":"))
    system, schemas = len(encoding.encode(baseline["system"])), len(encoding.encode(tools))
    return {"system": system, "tools": schemas, "total": system + schemas}


def measure() -> dict[str, dict[str, int]]:
    """Both figures: the starter soul.md with empty files, and every file at its limit."""
    figures = {}
    for case, files in (("starter", None), ("full", full_files())):
        with tempfile.TemporaryDirectory(prefix="tokens-") as root:
            figures[case] = count_tokens(saved_baseline(Path(root), files))
    return figures


def measure_scripts() -> dict[str, tuple[dict[str, int], float]]:
    """Every file at its limit, memory.md and user.md in each script: the figures and the
    characters per token of those two files (English first)."""
    found = {}
    cases = [("English", full_files())]
    cases += [(script, script_files(script)) for script in tokens_scripts.MEMORY]
    for script, files in cases:
        with tempfile.TemporaryDirectory(prefix="tokens-") as root:
            found[script] = (
                count_tokens(saved_baseline(Path(root), files)),
                chars_per_token(files),
            )
    return found


def main() -> int:
    figures = measure()
    for case, title in (("starter", "starter soul.md"), ("full", "every file at its limit")):
        f = figures[case]
        print(
            f"{title}: {f['total']:,} tokens "
            f"(system prompt {f['system']:,}, tool schemas {f['tools']:,}; budget {BUDGET:,})"
        )
    print("\nevery file at its limit, memory.md and user.md in (soul.md in English):")
    print("| memory.md and user.md in | tokens | system prompt | characters a token | budget |")
    print("| --- | --- | --- | --- | --- |")
    for script, (f, ratio) in measure_scripts().items():
        over = "within" if f["total"] <= BUDGET else f"over by {f['total'] - BUDGET:,}"
        print(f"| {script} | {f['total']:,} | {f['system']:,} | {ratio:.1f} | {over} |")
    return 0 if all(f["total"] <= BUDGET for f in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
