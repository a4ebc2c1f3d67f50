"""Where a decided call runs: the Runtime interface, and the composite that routes by tool.

A runtime gets a RunSpec (the request, its parsed arguments, the session's state when the call
was decided) and answers with run_labelled: (ok, output, label or None). The default run_labelled
calls run and adds no label, so a runtime with nothing to say about labels only writes run; a
ToolFailed from run becomes ok=false with its text. The composite runtime sends recall and memory
to the memory runtime (memoryd) and everything else to the other runtime (the fixtures here).
"""

from dataclasses import dataclass

from pydantic import BaseModel

from brokerd_shim.builtin import MEMORY_TOOLS
from brokerd_shim.errors import ToolFailed
from brokerd_shim.ledger import SessionState
from proto.labels import Label
from proto.messages import ToolRequest


@dataclass(frozen=True)
class RunSpec:
    request: ToolRequest
    arguments: BaseModel | dict
    state: SessionState

    @property
    def tool(self) -> str:
        return self.request.tool


class Runtime:
    """Runs a decided call. Subclasses write run, or run_labelled when they label results."""

    async def run(self, spec: RunSpec) -> str:
        raise NotImplementedError

    async def run_labelled(self, spec: RunSpec) -> tuple[bool, str, Label | None]:
        try:
            return True, await self.run(spec), None
        except ToolFailed as e:
            return False, str(e), None


class CompositeRuntime(Runtime):
    def __init__(self, memory: Runtime, other: Runtime):
        self.memory = memory
        self.other = other

    def route(self, tool: str) -> Runtime:
        return self.memory if tool in MEMORY_TOOLS else self.other

    async def run_labelled(self, spec: RunSpec) -> tuple[bool, str, Label | None]:
        return await self.route(spec.tool).run_labelled(spec)
