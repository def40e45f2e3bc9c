"""One function per use case, dependencies passed in: shared by the Lambda handlers and the CLI."""
