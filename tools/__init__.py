"""The repository's tools: generators of data that ships or is published, run by hand."""
