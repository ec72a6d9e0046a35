"""Background loops of a worker, one small module each, one start/stop protocol."""
