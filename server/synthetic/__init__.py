"""Synthetic Kineto traces for the demo and the tests."""
