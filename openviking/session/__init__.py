"""Sessions and their messages."""
