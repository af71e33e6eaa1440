"""Compute side of Refereed Training: commitments, RepOps, programs, replay. No chain code."""
