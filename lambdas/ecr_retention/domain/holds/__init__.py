"""Holds: a person pins an image for a time (model), and what the holds protect in one registry (protection)."""
