"""Training runs: checkpoints, content-addressed snapshots, resume and single-step replay."""
