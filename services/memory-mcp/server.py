"""The MCP side: the SDK's low-level server with memory-mcp's handlers, served over stdio.

The low-level server is used, not the decorator one, so that the tools carry exactly proto's
schemas and every answer is memoryd's text as it is. A refused or failed tool call is a tool result
with is_error set (the SDK's way of telling the model, as its own servers do for an unknown tool);
a resource or prompt that cannot be served is the SDK's JSON-RPC error. Each answer to a tool call
carries its label in _meta as "boxmaker/label", and makes the session's state stricter with it.
Tool calls go to memoryd (link.py); the block is rendered from {home}/memory/ with memoryd's own
code (blockfiles.py).

One connection is one session, and a running session keeps the block it started with (spec 1.3;
a write answers "it takes effect in the next session"): the block is rendered as the connection
starts, before any request is handled, and those exact bytes are served for the rest of the
connection, however memory changes meanwhile. Rendered at the first read instead, it would hold
what this session wrote before reading it, or what another wrote since the connection began.
When that first rendering fails, the block is tried again before the first tool call is sent and
at a read before it (a request that came while it ran gets its failure, so it waits at most
--timeout); once a call has gone to memoryd without a block, every read is answered with the
reason the last one failed: any block now would not be the one this session started with.
"""

import logging
from datetime import UTC, datetime
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from memory_mcp import journalled, raised, startstate
from memory_mcp.blockfiles import BlockFiles
from memory_mcp.calls import GRANT_LABEL, TOOLS, Refused, prepare
from memory_mcp.errors import MemorydUncertain, MemoryMcpError
from memory_mcp.keptfiles import KeptFiles
from memory_mcp.link import Memoryd
from memory_mcp.session import SessionState, client_key, session_id
from proto.labels import Label, is_class, stricter

log = logging.getLogger("memory_mcp.server")

BLOCK_URI = "memory://block"
BLOCK_PROMPT = "memory_block"
BLOCK_DESCRIPTION = (
    "The memory block this session starts with: soul.md, memory.md and user.md as memoryd "
    "renders them, fixed as this connection starts (memory writes show in the next "
    "session's block)."
)
LABEL_KEY = "boxmaker/label"


def not_served_text(what: str, name: str) -> str:
    served = BLOCK_URI if what == "resource" else BLOCK_PROMPT
    return f"no {what} {name[:200]!r}: memory-mcp serves {served}"


class MemoryMcp:
    """One connection's handlers: its session, its state, the link to memoryd and the block."""

    def __init__(
        self,
        memoryd: Memoryd,
        block_files: BlockFiles,
        trust: str,
        klass: str,
        started: datetime | None = None,
        kept: tuple[Path, Path] | None = None,
    ):
        self.memoryd = memoryd
        self.kept = kept  # (the folder of clients' kept states, the home): raised.py
        self.block_files = block_files
        if not is_class(klass):
            raise ValueError(f"not a data class: {klass!r}")
        self.state = SessionState(klass=klass, untrusted=trust != "trusted")
        self.declared = self.state.label()
        self.kept_file: KeptFiles | None = None
        self.recall_check: startstate.RecallCheck | None = None  # no kept state: calls wait
        self.keeper = raised.Keeper(block_files.timeout)  # --timeout, as for the block
        self.started = started or datetime.now(UTC)
        self.session: str | None = None
        self.calls = 0
        self.block: str | None = None  # this session's block, once read
        self.opened: anyio.Event | None = None  # set once the start's own read has ended
        self.sent_without_block = False
        self.block_failure = ""  # why the last read failed: the answer once a call went without

    def session_for(self, ctx) -> str:
        """The session id, fixed at the first request that needs it, from the client's name."""
        if self.session is None:
            params = ctx.session.client_params
            name = params.client_info.name if params is not None else None
            self.session = session_id(name, self.started)
            self._take_kept(client_key(name))
            log.info(
                "session %s: client %r, %s%s",
                self.session,
                name[:200] if isinstance(name, str) else name,
                self.state.klass,
                ", untrusted" if self.state.untrusted else "",
            )
        return self.session

    def _take_kept(self, client: str) -> None:
        """Start from what this client's earlier connections raised its state to, or from what
        memoryd's recall log shows of them when nothing is kept (startstate.py)."""
        if self.kept is None:
            return
        folder, home = self.kept
        session = self.session or "-"
        timeout = self.keeper.timeout
        self.kept_file, found, self.recall_check = startstate.take(
            folder, home, client, session, self.declared, timeout
        )
        if found is not None:
            self.state.raise_to(found)

    async def _keep_raised(self, label: Label) -> str | None:
        """Keep the state an answer labelled label raises, before the answer goes out; why it
        cannot be kept (the answer is then withheld), else None."""
        if self.kept_file is None or not raised.to_keep(self.declared, label):
            return None
        why = await self.keeper.keep(self.kept_file, self.state.label(), self.session or "-")
        if why is not None:
            log.warning(
                "session %s: cannot keep the raised state in %s (%s): the answer is withheld",
                self.session,
                self.kept_file.primary,
                why,
            )
        return why

    async def _look_again(self, session: str) -> None:
        """Before a write, this connection raised to what its client's kept state says now. The
        client may hold both registrations config-snippet prints, under its one name: a
        memory-tainted hit the untrusted one answered (and kept before answering) is in the same
        conversation, and must make this one's write a note, not an edit of user.md."""
        if self.kept_file is None or self.state.label() == raised.WORST:
            return
        found = await self.keeper.look(self.kept_file)
        if found is None or stricter(self.state.label(), found.label) == self.state.label():
            return
        self.state.raise_to(found.label)
        log.warning(
            "session %s: %s says another connection of this client (session %s, %s) read "
            "untrusted or secret memory, so this connection is now %s%s",
            session,
            self.kept_file.primary,
            found.session,
            found.since,
            self.state.klass,
            ", untrusted" if self.state.untrusted else "",
        )

    # --- tools -----------------------------------------------------------------------------------
    async def list_tools(self, ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=description, input_schema=schema)
                for name, (description, schema) in TOOLS.items()
            ]
        )

    async def call_tool(self, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        session = self.session_for(ctx)
        if self.recall_check is not None:  # not one call is sent before the log is read
            self.state.raise_to(await self.recall_check.label())
        tool = params.name
        if tool == "memory":
            await self._look_again(session)
        self.calls += 1
        call_id = journalled.call_id(self.declared.untrusted, self.calls)
        prepared = prepare(
            tool, params.arguments, session, call_id, self.state.klass, self.state.untrusted
        )
        if isinstance(prepared, Refused):
            log.info(
                "session %s call %s: %r refused: %s", session, call_id, tool[:64], prepared.text
            )
            return await self._answer(False, prepared.text, GRANT_LABEL)
        if self.block is None and not self.sent_without_block:
            try:
                await self._block(ctx)
            except MCPError:
                self.sent_without_block = True  # read() logged why; the call goes on all the same
        try:
            # Once sent, a call is seen through to memoryd's answer (the link bounds it in time):
            # cancelled half-way, a write memoryd applies would be answered as not done.
            with anyio.CancelScope(shield=True):
                reply = await self.memoryd.call(prepared)
        except MemorydUncertain as e:
            # Not an error: a client that retries failed calls would make the write twice.
            log.warning("session %s call %s: %s: no answer", session, call_id, tool)
            return await self._answer(True, str(e), GRANT_LABEL)
        except MemoryMcpError as e:
            return await self._answer(False, str(e), GRANT_LABEL)
        label = stricter(GRANT_LABEL, reply.label)
        log.info(
            "session %s call %s: %s ok=%s, %s%s",
            session,
            call_id,
            tool,
            reply.ok,
            label.klass,
            ", untrusted" if label.untrusted else "",
        )
        return await self._answer(reply.ok, reply.output, label, tool == "memory")

    async def _answer(self, ok: bool, text: str, label: Label, write: bool = False):
        self.state.raise_to(label)  # this connection stays raised whatever the keeping does
        why = await self._keep_raised(label)
        if why is not None:
            named = self.kept_file.primary if self.kept_file is not None else None
            ok, text, label = (
                False,
                raised.withheld_text(label, named, why, write and ok),
                GRANT_LABEL,
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=not ok,
            meta={LABEL_KEY: label.to_wire()},
        )

    # --- the block: a resource and a prompt ------------------------------------------------------
    async def open_block(self) -> None:
        """The block read as the connection starts (stdio.serve runs this before any request)."""
        self.opened = anyio.Event()
        try:
            text = await self.block_files.read("(starting)")
        except MemoryMcpError as e:
            self.block_failure = str(e)  # read() logged it; the first request that needs the
            return  # block tries again
        finally:
            self.opened.set()
        if self.block is None:
            self.block = text
            log.info("the memory block read at the connection's start, %d characters", len(text))

    async def _block(self, ctx) -> str:
        """This session's block: the one read at the start, or else the first one read before
        any tool call was sent; the same bytes at every read after it."""
        waited = self.opened is not None and not self.opened.is_set()
        if self.opened is not None:
            await self.opened.wait()
        if self.block is not None:
            return self.block
        if self.sent_without_block or waited:  # the start's read just failed: not read twice
            raise MCPError(code=types.INTERNAL_ERROR, message=self.block_failure)
        try:
            text = await self.block_files.read(self.session_for(ctx))
        except MemoryMcpError as e:
            self.block_failure = str(e)
            raise MCPError(code=types.INTERNAL_ERROR, message=str(e)) from None
        if self.block is None:  # two first reads at once: the one that ended first stands
            self.block = text
            log.info("session %s: the memory block read, %d characters", self.session, len(text))
        return self.block

    async def list_resources(self, ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=BLOCK_URI,
                    name="memory block",
                    description=BLOCK_DESCRIPTION,
                    mime_type="text/markdown",
                )
            ]
        )

    async def read_resource(self, ctx, params) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri != BLOCK_URI:
            raise MCPError(code=types.INVALID_PARAMS, message=not_served_text("resource", uri))
        text = await self._block(ctx)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=BLOCK_URI, mime_type="text/markdown", text=text)
            ]
        )

    async def list_prompts(self, ctx, params) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[types.Prompt(name=BLOCK_PROMPT, description=BLOCK_DESCRIPTION)]
        )

    async def get_prompt(self, ctx, params) -> types.GetPromptResult:
        if params.name != BLOCK_PROMPT:
            raise MCPError(
                code=types.INVALID_PARAMS, message=not_served_text("prompt", params.name)
            )
        text = await self._block(ctx)
        return types.GetPromptResult(
            description=BLOCK_DESCRIPTION,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
            ],
        )

    def server(self, version: str) -> Server:
        trust = "untrusted" if self.state.untrusted else "trusted"
        return Server(
            "boxmaker-memory",
            version=version,
            instructions=(
                "boxmaker's memory: recall searches notes and past sessions; memory edits "
                "memory.md and user.md, and takes effect in the next session. memory://block is "
                "what this session started with: read again, it stays the same until the next "
                f"connection. This server was registered as {trust}."
            ),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
        )
