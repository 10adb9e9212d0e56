"""The fork supply chain: what each fork is (recipes), its tree at the pinned commit (source), and
its images built, pushed and verified in the registry (images)."""
