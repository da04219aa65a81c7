"""The typed contract every client keeps: the operations declared once on the interface, the
forms of their values, their results, and how a client warns that something degraded."""
