"""Task data: committed datasets and counter-based randomness keyed by the task."""
