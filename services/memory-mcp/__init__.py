"""memory-mcp: boxmaker's memory for any agent that speaks the Model Context Protocol.

An MCP server over stdio (design section 8) offering the tools recall and memory with the spec's
argument schemas and answers (spec 5), and the memory block as the resource memory://block and as
a prompt. It reaches memoryd as brokerd does, with memory_call on the broker socket and nothing
else, carrying the trust and class the owner declared when registering the server: an MCP client
cannot say what its model has read, so the owner says it, and the default (untrusted) fails safe.
The block is rendered from {home}/memory/ by memoryd's own block.build, so it is the text a new
session gets, without a second request to memoryd.
"""
