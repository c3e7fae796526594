"""Training loops as generators, their records, time-lapse probes and evaluation."""
