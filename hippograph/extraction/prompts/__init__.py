"""Prompts as plain functions, each beside the output model it asks for."""
