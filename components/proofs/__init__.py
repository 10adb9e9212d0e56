"""After the installs: the smoke proof of the caps on a GPU cluster, and the lab's proof on fake GPUs."""
