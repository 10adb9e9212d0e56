"""The typed stack configuration, at the ground of the program: it imports nothing else of it.

`model` holds every key, its type, default and validation; `load` reads the running stack's keys
into a StackConfig, or fails with one message naming every bad key.
"""
