"""What started a run and how a run and a repository ended: the words the workflow's records and the report share.
Apart from the report (report.py), so that a function that only starts or names runs (workflow.py) does not build
the report's models, nor import the planner and the doctor whose models the report holds."""

from __future__ import annotations

from typing import Literal

Trigger = Literal["schedule", "push", "cli"]
RunOutcome = Literal["ok", "blocked", "partial", "failed"]
# ok: evaluated, every planned action done or not needed; blocked: the inventory stopped every deletion;
# skipped: over max_delete_fraction; partial: some actions failed or were cancelled for a reason other than
# a tag change; busy: another evaluation holds the repository; gone: the repository no longer exists;
# failed: the evaluation itself failed (error names why); unmanaged: no policy matches it.
RepositoryOutcome = Literal["ok", "blocked", "skipped", "partial", "busy", "gone", "failed", "unmanaged"]
