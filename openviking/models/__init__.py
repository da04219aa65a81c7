"""Models: embedders, chat LLMs and rerankers."""
