"""Numbers computed from traces and recordings: statistics, rollout, head scores, neurons, export."""
