"""Self-questioning."""
