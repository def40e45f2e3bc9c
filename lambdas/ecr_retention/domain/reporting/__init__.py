"""What a run tells people: the report, its summary, costs, sizes and the escaping of outside text."""
