"""The component package: the stack's profiles as components of `kai-gpu-fractions`, for Pulumi programs in
any language (served by components/plugin.py)."""
