"""Reviewing a change before it lands: the rules diff and the lifecycle-policy diff (the CLI's `diff`)."""
