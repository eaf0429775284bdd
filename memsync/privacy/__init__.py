"""What may leave this device, and taking back what did: the outbound gate, the scanner, forget."""
