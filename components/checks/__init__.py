"""Where stacks last updated before the checks were split by job find their dynamic resources'
providers. Pulumi pickles a provider into the state by module and class name, and a resource keeps
the path it was created with; refresh and destroy load it from there. Nothing in the program imports
this package: tests/unit/test_provider_paths.py loads every recorded path.
"""
