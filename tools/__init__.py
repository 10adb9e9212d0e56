"""Repository tooling that is not part of the Pulumi program (CI helpers, report generators)."""
