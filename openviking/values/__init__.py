"""The values a call names and their checks: plain arguments, viking:// URIs and whose space
they are in, tags, and times and dates."""
