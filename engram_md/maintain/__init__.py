"""Commands that inspect or repair the folder: doctor, forget, history, status."""
