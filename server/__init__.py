"""sdpa-analyzer's server side: file I/O, trace ingestion, scoring, findings, the tools, the MCP server, the CLI."""

__version__ = "0.2.0"
