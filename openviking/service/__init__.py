"""The local service's rendezvous: where a running service announces itself for its store, and
how a command line finds it."""
