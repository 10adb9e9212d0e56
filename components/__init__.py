"""Pulumi components of the kai-gpu-fractions stack, one per module."""
