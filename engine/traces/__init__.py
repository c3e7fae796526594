"""What a Run hands the views: traces of attention (dense, recorded from queries and keys) and the tracing entry point."""
