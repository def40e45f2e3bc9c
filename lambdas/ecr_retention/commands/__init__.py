"""CLI commands: each module registers one subcommand and returns an exit code."""
