"""Real Linux TCP through the RTL: the real-time bridge, the namespaces around
it, the TCP endpoints and the experiments (docs/experiments.md)."""
