"""The operating system as the library meets it: text it hands over (file names, paths,
arguments) and child processes that answer requests and are killed when they do not."""
