"""Retrieval and scale benchmarks behind `hippograph bench ...`, with their baselines in the same run."""
