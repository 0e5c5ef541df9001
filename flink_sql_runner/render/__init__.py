"""Showing results: plans, lineage and status as text, JSON, Markdown, Mermaid and DOT."""
