"""Sources an add reads from elsewhere, made local first: a URL fetched, an archive unpacked."""
