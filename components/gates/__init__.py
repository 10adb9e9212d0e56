"""After each install, the guide's verification of that step, as a gate the next step waits for."""
