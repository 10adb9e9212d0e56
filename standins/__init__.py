"""STAND-INS of upstream components for the offline mode (scripts/deploy-local.sh) and the tests:
see standins/README.md."""
