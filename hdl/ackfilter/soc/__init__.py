"""The control plane: a small RISC-V SoC that owns the datapath's parameters."""
