"""The broker process: configuration, handler pools, purgatory, and the composition root."""
