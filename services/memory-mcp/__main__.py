from memory_mcp.cli import main

main()
