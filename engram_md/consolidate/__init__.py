"""Keeping the folder healthy over months: the plan, its planning steps, the judge, the run."""
