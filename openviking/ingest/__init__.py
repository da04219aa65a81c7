"""Ingestion: walk, chunk, summarise, embed, upsert."""
