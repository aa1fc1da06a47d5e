"""Files a run writes: per-request records (`records`), the compliance audit trail (`audit`), both through one
buffered JSONL writer (`jsonl`), and the end-of-run summary (`summary`)."""
