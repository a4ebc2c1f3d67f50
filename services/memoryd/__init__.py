"""memoryd: the memory role. Owns {home}/memory/ and {home}/index/; serves the memory block to
loopd, recall and memory calls for brokerd, and reindex and memory admin for the owner's bxctl."""
