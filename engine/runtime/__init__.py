"""Where and how work runs: device choice, memory kept between Runs, atomic file writes."""
