"""What counts as running: the in-use index the planner protects with, the in-use memory, and when a reading is suspect."""
